"""Secret scanning of one long line: CPU time at two lengths, and their ratio.

Every record, cassette line and export passes through
``lab.export.secrets.SecretScanner.redact``; a long field (a provider's answer,
a file an agent printed) is one long line. Linear scanning gives a ratio near
the ratio of the lengths (8 by default); a pattern that may start at every
position of the line and scan the rest of it gives near its square (64; a
98 KB answer of one repeated letter once took 14 s).

Three sets of lines, each timed at ``--sizes`` (default 100 KB and 800 KB)
over ``--repeat`` rounds, interleaved, median CPU time:

- ``shapes`` (default): one letter, prose, URLs, base64, ``AKIA``, ``//``;
- ``real``: the long lines real agents and providers produce that once made a
  detect-secrets pattern quadratic (a base64url JSON cursor beside a dot for
  the JWT pattern, URLs then an npm token line, ``sk-`` runs then OpenAI's
  legacy marker, distinct AWS key ids, distinct basic-auth URLs);
- ``units``: every literal a key-shape pattern requires, every single
  character and pair of them that tests/export/test_secret_scan_cost.py
  repeats (about 160 lines; the sweep that tells a new quadratic pattern).

A plain script, not a test:

    .venv/bin/python benchmarks/secret_scan.py [--set shapes|real|units|all] [--repeat R] [--sizes A B]
"""

from __future__ import annotations

import argparse
import base64
import itertools
import json
import random
import statistics
import string
import time

from lab.export.secrets import SecretScanner

SHAPES = {
    "one letter": "z",
    "prose": "the agent fixed the default argument and ran the tests again. ",
    "URLs": "see https://example.org/docs/page?id=42 and ",
    "base64": "eyJhbGciOiJIUzI1NiJ9QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVo",
    "AWS-like ids": "AKIA",
    "slashes": "//",
}
SIZES = (100_000, 800_000)


def real_lines(length: int, seed: int = 7) -> dict[str, str]:
    """The long lines of the ``real`` set at about ``length`` characters each."""
    rng = random.Random(seed)

    def word(n: int, alphabet: str = string.ascii_uppercase + string.digits) -> str:
        return "".join(rng.choice(alphabet) for _ in range(n))

    cursor = base64.urlsafe_b64encode(json.dumps([{"i": i} for i in range(length // 12)]).encode()).decode()
    return {
        "base64url JSON beside a dot (JWT)": "Decoded the cursor " + cursor[:length] + " and it was fine.",
        "URLs, then an npm token line": "https://example.org/a/b " * (length // 24)
                                        + "//registry.npmjs.org/:_authToken=${NPM_TOKEN}",
        "sk- runs, then the legacy marker": "sk-" * (length // 3) + " T3BlbkFJ",
        "distinct AWS key ids": " ".join("AKIA" + word(16) for _ in range(length // 21)),
        "distinct basic-auth URLs": " ".join(f"http://u{i}:pw{word(6)}@h{i}.example" for i in range(length // 30)),
    }


def units() -> list[str]:
    """What a long line of the ``units`` set repeats: every literal a key-shape pattern needs,
    single characters and pairs of them."""
    from lab.export.linear_scan import required_literals
    from lab.export.secrets import EXTRA_SHAPES, SK_KEY, key_shape_plugins

    patterns = [p for plugin in key_shape_plugins() for p in plugin().denylist] + [SK_KEY, *(p for _, p in EXTRA_SHAPES)]
    literals = sorted({literal for p in patterns for literal in required_literals(p)})
    pairs = ["".join(pair) for pair in itertools.product("zA0/:-. ", repeat=2)]
    return sorted(set(literals + list("za0Z_-./:@ =+$\"'<>") + pairs))


def lines_of(which: str, size: int) -> dict[str, str]:
    if which == "shapes":
        return {name: unit * (size // len(unit)) for name, unit in SHAPES.items()}
    if which == "real":
        return real_lines(size)
    return {f"{unit!r} repeated": unit * (size // len(unit)) for unit in units()}


def cpu_ms(scanner: SecretScanner, line: str) -> float:
    start = time.process_time()
    scanner.redact({"finalMessage": line})
    return (time.process_time() - start) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--set", choices=["shapes", "real", "units", "all"], default="shapes")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--sizes", type=int, nargs=2, default=SIZES, metavar=("SMALL", "LARGE"))
    args = parser.parse_args()
    sizes = tuple(args.sizes)
    scanner = SecretScanner(env={"OPENAI_API_KEY": "sk-benchmark-not-in-any-line-0123456789"})
    cpu_ms(scanner, "warm up: import the plugins, compile the patterns")
    expected = sizes[1] / sizes[0]
    for which in (["shapes", "real", "units"] if args.set == "all" else [args.set]):
        lines = {(name, size): line for size in sizes for name, line in lines_of(which, size).items()}
        names = list(dict.fromkeys(name for name, _ in lines))
        times: dict[tuple[str, int], list[float]] = {key: [] for key in lines}
        for _ in range(args.repeat):
            for key, line in lines.items():
                times[key].append(cpu_ms(scanner, line))
        width = max(len(name) for name in names)
        print(f"{which + ': line of':{width}} {sizes[0]:>9,} {sizes[1]:>9,}  ratio (linear ≈ {expected:g})")
        worst = 0.0
        for name in names:
            small, large = (statistics.median(times[(name, size)]) for size in sizes)
            ratio = large / max(small, 0.001)
            worst = max(worst, ratio)
            print(f"{name:{width}} {small:7.1f}ms {large:7.1f}ms  {ratio:5.1f}")
        print(f"{which}: largest ratio {worst:.1f} (linear ≈ {expected:g}, quadratic ≈ {expected ** 2:g})\n")


if __name__ == "__main__":
    main()
