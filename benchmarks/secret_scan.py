"""Secret scanning of one long line: CPU time at 100 KB and 800 KB, and their ratio.

Every record, cassette line and export passes through
``lab.export.secrets.SecretScanner.redact``; a long field (a provider's answer,
a file an agent printed) is one long line. Linear scanning gives a ratio near
8; a pattern that may start at every position of the line and scan the rest
of it gives near 64 (a 98 KB answer of one repeated letter once took 14 s).
Each shape is timed over ``--repeat`` rounds, interleaved, median CPU time.
A plain script, not a test:

    .venv/bin/python benchmarks/secret_scan.py [--repeat R]   # default R=3
"""

from __future__ import annotations

import argparse
import statistics
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


def cpu_ms(scanner: SecretScanner, line: str) -> float:
    start = time.process_time()
    scanner.redact({"finalMessage": line})
    return (time.process_time() - start) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    scanner = SecretScanner(env={"OPENAI_API_KEY": "sk-benchmark-not-in-any-line-0123456789"})
    lines = {(name, size): unit * (size // len(unit)) for name, unit in SHAPES.items() for size in SIZES}
    cpu_ms(scanner, "warm up: import the plugins, compile the patterns")
    times: dict[tuple[str, int], list[float]] = {key: [] for key in lines}
    for _ in range(args.repeat):
        for key, line in lines.items():
            times[key].append(cpu_ms(scanner, line))
    print(f"{'line of':14} {'100 KB':>9} {'800 KB':>9}  ratio (linear ≈ 8)")
    for name in SHAPES:
        small, large = (statistics.median(times[(name, size)]) for size in SIZES)
        print(f"{name:14} {small:7.1f}ms {large:7.1f}ms  {large / max(small, 0.001):5.1f}")


if __name__ == "__main__":
    main()
