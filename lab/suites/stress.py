"""Seeded ``chain-walk-rules-NN`` instances for the long-context-stress suite (SPEC S7).

An instance is a workspace holding a chain of 16 segment files plus decoys.
``start.txt`` names segment 1; each segment file carries a ``token: <t>`` line
and a ``next: <path>`` line naming the next segment (``next: END`` on segment
16). Comment lines (``#``) and decoy files carry stale tokens and paths. The
prompt states three output rules once, one from each pool of
:data:`RULE_POOLS` (order, letter case, frame); each rule has its own command
verifier, an inline check that prints ``RULE-<n> OK``, so a run can satisfy
some rules and miss others.

Instance ``n`` draws its files and tokens from ``seed + n`` (its rules from a
rotation of the pools shuffled by ``seed``) through :class:`Draw`
(sha256 of ``"<seed>:<counter>"``), not from :mod:`random`, whose derived
methods may change between Python versions: the same (index, seed) gives
identical bytes everywhere. ``lab gen-stress`` writes instances 1..N with
:func:`write_suite`; instances 1-5 are the ones bundled in
``suites/long-context-stress``.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

from lab.errors import ConfigError
from lab.files import loads_json, read_text

DEFAULT_SEED = 20261130
SEGMENTS = 16
DECOYS = 8
RESULT_FILE = "result.txt"
GENERATED_SUITE_ID = "long-context-stress-generated"
MAX_INSTANCES = 500
TASK_PREFIX = "chain-walk-rules-"

_T = TypeVar("_T")

_WORDS = (
    "amber", "basalt", "cobalt", "dune", "ember", "fjord", "garnet", "harbor", "indigo",
    "jasper", "kestrel", "lagoon", "marble", "nectar", "onyx", "pewter", "quartz", "raven",
    "sable", "tundra", "umber", "velvet", "willow", "xenon", "yarrow", "zephyr", "alder",
    "birch", "cedar", "delta", "egret", "falcon", "gorse", "heron", "ibis", "juniper",
    "krill", "larch", "magpie", "nimbus", "osprey", "plover", "quill", "rowan", "spruce",
    "thistle", "upland", "vireo")
_DIRS = ("vault", "vault/east", "vault/west", "archive", "archive/old", "relay",
         "relay/b", "notes", "notes/misc")
_FILLER = (
    "{t} worker-{a} heartbeat ok seq={n}",
    "{t} cache-{a} evicted {n} entries",
    "{t} sync job {n} finished in {a}.{b}s",
    "{t} audit: previous token: {w}-{b:02d} (rotated)",
    "{t} gc pause {a}{b} ms",
    "{t} link check: {w} reachable",
    "{t} queue depth {n}",
)
_STALE = (
    "# stale copy, do not follow: next: {p}",
    "# previous revision: token: {w}-{b:02d}",
    "# moved from {p} during the reorganisation",
)


class Draw:
    """Deterministic draws: value k is derived from sha256(``"<seed>:<k>"``).

    Args:
        seed: any integer; the same seed gives the same sequence everywhere.
    """

    def __init__(self, seed: int) -> None:
        self._seed = seed
        self._count = 0

    def below(self, n: int) -> int:
        """An integer in [0, n); ``n`` >= 1. (Modulo bias below 2**-40 is ignored.)"""
        self._count += 1
        digest = hashlib.sha256(f"{self._seed}:{self._count}".encode()).digest()
        return int.from_bytes(digest[:8], "big") % n

    def pick(self, items: Sequence[_T]) -> _T:
        """One element of a non-empty sequence."""
        return items[self.below(len(items))]

    def shuffled(self, items: Sequence[_T]) -> list[_T]:
        """A Fisher-Yates permutation of ``items`` (a new list)."""
        out = list(items)
        for i in range(len(out) - 1, 0, -1):
            j = self.below(i + 1)
            out[i], out[j] = out[j], out[i]
        return out


# ---------------------------------------------------------------- output rules
# A rule: (slug, sentence for the prompt, check body). A check body is Python run by
# `python3 -c` in the workspace after the prelude below: L is the list of non-empty,
# stripped lines of result.txt, C the chain tokens in walk order (lower case), K every
# token of the instance, P the chain's file paths in walk order. It sets ok and why.
Chain = tuple[list[str], list[str]]  # (tokens in walk order, paths in walk order)

_ORDER: list[tuple[str, str, str]] = [
    ("walk-order", "List the tokens in the order you visit them: segment 1 first, segment 16 last.",
     "W=C"),
    ("reverse-order", "List the tokens in reverse walk order: segment 16 first, segment 1 last.",
     "W=C[::-1]"),
    ("sorted-order", "List the tokens sorted alphabetically, ignoring letter case.",
     "W=sorted(C)"),
]
_CASE: list[tuple[str, str, str]] = [
    ("odd-upper", "Write the token of every odd-numbered segment (1, 3, 5, ..., 15) in upper case "
     "and every other token in lower case.", "U={i for i in range(1,17) if i%2}"),
    ("even-upper", "Write the token of every even-numbered segment (2, 4, ..., 16) in upper case "
     "and every other token in lower case.", "U={i for i in range(1,17) if i%2==0}"),
    ("third-upper", "Write the token of every segment whose number is a multiple of 3 (3, 6, 9, "
     "12, 15) in upper case and every other token in lower case.",
     "U={i for i in range(1,17) if i%3==0}"),
    ("second-half-upper", "Write the tokens of segments 9 to 16 in upper case and the tokens of "
     "segments 1 to 8 in lower case.", "U=set(range(9,17))"),
]
_FRAME: list[tuple[str, str, str]] = [
    ("count-footer", "End the file with the line COUNT=16.", "ok=L[-1:]==['COUNT=16']"),
    ("start-header", "Begin the file with the line START=<path of the segment 1 file, exactly as "
     "start.txt gives it>.", "ok=L[:1]==['START='+P[0]]"),
    ("last-footer", "End the file with the line LAST=<path of the segment 16 file, exactly as "
     "segment 15 gives it>.", "ok=L[-1:]==['LAST='+P[-1]]"),
    ("begin-end", "Begin the file with the line BEGIN and end it with the line END.",
     "ok=L[:1]==['BEGIN'] and L[-1:]==['END']"),
    ("walk-header", "Begin the file with the line WALK OF 16 SEGMENTS.",
     "ok=L[:1]==['WALK OF 16 SEGMENTS']"),
]
RULE_POOLS = (_ORDER, _CASE, _FRAME)
"""Rule 1, 2, 3 come from these pools. Each pool is shuffled once by the base seed and
instance n takes entry (n - 1) mod len(pool): pool sizes 3, 4, 5 make every rule appear
within the first five instances and the 60 combinations cycle."""


def _rules(index: int, seed: int) -> list[tuple[str, str, str]]:
    draw = Draw(seed)
    return [draw.shuffled(pool)[(index - 1) % len(pool)] for pool in RULE_POOLS]

_PRELUDE = ("import pathlib,sys\np=pathlib.Path({result!r})\n"
            "L=[l.strip() for l in p.read_text('utf-8','replace').splitlines() if l.strip()] "
            "if p.is_file() else []\nC={tokens!r}\nK=set(C+{decoys!r})\nP={paths!r}\n")
_ORDER_TAIL = "G=[l.lower() for l in L if l.lower() in K]\nok=G==W\nwhy='token lines in order: %s'%G\n"
_CASE_TAIL = ("E={t: t.upper() if i+1 in U else t for i,t in enumerate(C)}\n"
              "G=[l for l in L if l.lower() in E]\nbad=[l for l in G if l!=E[l.lower()]]\n"
              "miss=sorted(set(E)-{l.lower() for l in G})\nok=not bad and not miss\n"
              "why='wrong case: %s; missing: %s'%(bad,miss)\n")
_FRAME_TAIL = "why='first line %r, last line %r'%(L[:1],L[-1:])\n"
_EPILOGUE = ("print('RULE-{n} OK' if ok else 'RULE-{n} FAIL: '+why[:300])\n"
             "sys.exit(0 if ok else 1)\n")


def _check_code(slot: int, body: str, chain: Chain, decoys: list[str]) -> str:
    tokens, paths = chain
    tail = (_ORDER_TAIL, _CASE_TAIL, _FRAME_TAIL)[slot]
    prelude = _PRELUDE.format(result=RESULT_FILE, tokens=tokens, decoys=decoys, paths=paths)
    return prelude + body + "\n" + tail + _EPILOGUE.format(n=slot + 1)


def expected_output(rules: Sequence[str], chain: Chain) -> str:
    """The text of result.txt that satisfies the three rules (slugs, one per pool)."""
    tokens, paths = chain
    order, case, frame = rules
    listed = list(enumerate(tokens, 1))
    if order == "reverse-order":
        listed.reverse()
    elif order == "sorted-order":
        listed.sort(key=lambda item: item[1])
    upper: Callable[[int], bool] = {
        "odd-upper": lambda i: i % 2 == 1, "even-upper": lambda i: i % 2 == 0,
        "third-upper": lambda i: i % 3 == 0, "second-half-upper": lambda i: i >= 9}[case]
    lines = [token.upper() if upper(i) else token for i, token in listed]
    head = {"start-header": [f"START={paths[0]}"], "begin-end": ["BEGIN"],
            "walk-header": ["WALK OF 16 SEGMENTS"]}.get(frame, [])
    foot = {"count-footer": ["COUNT=16"], "last-footer": [f"LAST={paths[-1]}"],
            "begin-end": ["END"]}.get(frame, [])
    return "\n".join(head + lines + foot) + "\n"


# ---------------------------------------------------------------- the workspace


def _filler(draw: Draw, count: int) -> list[str]:
    lines = []
    for _ in range(count):
        stamp = f"2026-11-{1 + draw.below(28):02d}T{draw.below(24):02d}:{draw.below(60):02d}Z"
        lines.append(draw.pick(_FILLER).format(t=stamp, a=draw.below(10), b=draw.below(100),
                                               n=draw.below(100000), w=draw.pick(_WORDS)))
    return lines


def _segment_text(draw: Draw, token: str, next_path: str, stale_path: str) -> str:
    stale = draw.pick(_STALE).format(p=stale_path, w=draw.pick(_WORDS), b=draw.below(100))
    body = _filler(draw, 3 + draw.below(5))
    facts = [f"token: {token}", f"next: {next_path}"]
    if draw.below(2):
        facts.reverse()
    body.insert(1 + draw.below(len(body)), facts[0])
    body.insert(1 + draw.below(len(body)), stale)
    body.append(facts[1])
    body.extend(_filler(draw, 2 + draw.below(4)))
    return "# segment file (walk format 1)\n" + "\n".join(body) + "\n"


def _layout(draw: Draw) -> tuple[list[str], list[str], list[str]]:
    """(chain paths, decoy paths, tokens for chain then decoys), all distinct."""
    names: list[str] = []
    while len(names) < SEGMENTS + DECOYS:
        name = f"{draw.pick(_DIRS)}/{draw.pick(_WORDS)}-{draw.below(90) + 10}.txt"
        if name not in names:
            names.append(name)
    tokens: list[str] = []
    while len(tokens) < SEGMENTS + DECOYS:
        token = f"{draw.pick(_WORDS)}-{draw.below(90) + 10}"
        if token not in tokens and token.split("-")[0] not in {t.split("-")[0] for t in tokens}:
            tokens.append(token)
    return names[:SEGMENTS], names[SEGMENTS:], tokens


def _files(draw: Draw, chain_paths: list[str], decoy_paths: list[str],
           tokens: list[str]) -> dict[str, str]:
    files: dict[str, str] = {}
    everything = chain_paths + decoy_paths
    for i, path in enumerate(chain_paths):
        nxt = chain_paths[i + 1] if i + 1 < SEGMENTS else "END"
        files[path] = _segment_text(draw, tokens[i], nxt, draw.pick(decoy_paths))
    for i, path in enumerate(decoy_paths):
        # Decoys point at each other or into the middle of the chain: a guess never ends well.
        nxt = decoy_paths[(i + 1) % DECOYS] if i % 3 else draw.pick(everything)
        files[path] = _segment_text(draw, tokens[SEGMENTS + i], nxt, draw.pick(everything))
    files["start.txt"] = (
        "Walk instructions\n=================\n"
        f"# an older walk started at {decoy_paths[0]}; it was retired\n"
        f"The walk starts at: {chain_paths[0]}\n"
        "Follow the next: line of each segment file until next: END.\n")
    return dict(sorted(files.items()))


def _prompt(rule_texts: list[str]) -> str:
    listed = "\n".join(f"{n}. {text}" for n, text in enumerate(rule_texts, 1))
    return (
        f"This workspace holds a chain of {SEGMENTS} segment files. start.txt names the file "
        "of segment 1. In each segment file, the line that begins with `token: ` gives that "
        "segment's token and the line that begins with `next: ` gives the workspace-relative "
        f"path of the next segment's file; `next: END` marks segment {SEGMENTS}, the last. "
        "Lines that begin with `#` are comments; ignore them. Files you do not reach by "
        f"following the chain are not part of it. Walk the whole chain and write its {SEGMENTS} "
        f"tokens to {RESULT_FILE}, one token per line, following these three rules:\n{listed}\n"
        f"Do not change any other file. The rules are stated only here.")


def generate_instance(index: int, seed: int = DEFAULT_SEED,
                      ) -> tuple[dict[str, Any], dict[str, str], dict[str, Any]]:
    """Build chain-walk instance ``index`` from ``seed + index``.

    Args:
        index: instance number, >= 1; the task id is ``chain-walk-rules-<index:02d>``.
        seed: base seed; instance n uses ``seed + n``.

    Returns:
        (task entry for suite.json, {path relative to the fixture dir: text},
        scripted-provider script). Identical for identical arguments.

    Raises:
        ValueError: ``index`` < 1.
    """
    if index < 1:
        raise ValueError(f"instance index must be >= 1, got {index}")
    draw = Draw(seed + index)
    task_id = f"{TASK_PREFIX}{index:02d}"
    chain_paths, decoy_paths, tokens = _layout(draw)
    files = _files(draw, chain_paths, decoy_paths, tokens)
    chain: Chain = (tokens[:SEGMENTS], chain_paths)
    chosen = _rules(index, seed)
    verifiers = [{"id": f"rule-{n}-{slug}", "kind": "command",
                  "argv": ["python3", "-c", _check_code(n - 1, body, chain, tokens[SEGMENTS:])],
                  "timeoutMs": 30000, "expectExit": 0, "expectStdoutIncludes": f"RULE-{n} OK"}
                 for n, (slug, _, body) in enumerate(chosen, 1)]
    task = {
        "id": task_id, "prompt": _prompt([c[1] for c in chosen]),
        "fixture": f"fixtures/{task_id}",
        "budget": {"maxTurns": 40, "maxWallMs": 900000, "maxTokens": 2000000, "maxToolCalls": 60},
        "policy": {"mode": "auto", "allow": ["write"], "readOnly": False},
        "verifiers": verifiers, "tags": ["chain-walk", "live-only", "stress"], "fixtureGit": False,
    }
    reads = [{"toolCalls": [{"name": "read_file", "arguments": {"path": path}}]}
             for path in ["start.txt", *chain_paths]]
    answer = expected_output([c[0] for c in chosen], chain)
    script = {"schemaVersion": 1, "taskId": task_id, "turns": [
        *reads,
        {"toolCalls": [{"name": "write_file", "arguments": {"path": RESULT_FILE, "content": answer}}]},
        {"content": f"DONE: walked {SEGMENTS} segments and wrote {RESULT_FILE}."}]}
    return task, files, script


# ---------------------------------------------------------------- writing


def dump_json(doc: Any) -> bytes:
    """The byte form of every JSON file written here: 2-space indent, trailing newline."""
    return (json.dumps(doc, indent=2, ensure_ascii=False) + "\n").encode("utf-8")


def write_instance(suite_dir: Path, index: int, seed: int = DEFAULT_SEED) -> dict[str, Any]:
    """Write instance ``index``'s fixture and script under ``suite_dir``; return its task entry."""
    task, files, script = generate_instance(index, seed)
    fixture = suite_dir / task["fixture"]
    for rel, text in files.items():
        (fixture / rel).parent.mkdir(parents=True, exist_ok=True)
        (fixture / rel).write_bytes(text.encode("utf-8"))
    (suite_dir / "scripts").mkdir(parents=True, exist_ok=True)
    (suite_dir / "scripts" / f"{task['id']}.json").write_bytes(dump_json(script))
    return task


def _clear_previous(out_dir: Path, force: bool) -> None:
    if not out_dir.exists():
        return
    if not out_dir.is_dir():
        raise ConfigError(f"out={out_dir}: exists and is not a directory")
    if not any(out_dir.iterdir()):
        return
    if not force:
        raise ConfigError(f"out={out_dir}: directory exists and is not empty; pass force=true to replace it")
    try:
        previous = loads_json(read_text(out_dir / "suite.json")).get("suiteId")
    except (OSError, ValueError, AttributeError):
        previous = None
    if previous != GENERATED_SUITE_ID:
        raise ConfigError(f"out={out_dir}: not a directory written by gen-stress (no suite.json with "
                          f"suiteId {GENERATED_SUITE_ID!r}); refusing to replace it even with force=true")
    for part in ("fixtures", "scripts"):
        shutil.rmtree(out_dir / part, ignore_errors=True)
    (out_dir / "suite.json").unlink()


def write_suite(out_dir: Path, count: int, *, force: bool = False, seed: int = DEFAULT_SEED) -> Path:
    """Write instances 1..``count`` as a loadable suite directory.

    Args:
        out_dir: target directory; created when missing.
        count: number of instances, 1..MAX_INSTANCES.
        force: replace ``out_dir`` if an earlier gen-stress run wrote it.
        seed: base seed (instance n uses seed + n).

    Returns:
        ``out_dir`` (absolute).

    Raises:
        ConfigError: count out of range; ``out_dir`` not empty without ``force``,
            or not a gen-stress directory.
    """
    if not 1 <= count <= MAX_INSTANCES:
        raise ConfigError(f"instances: expected 1..{MAX_INSTANCES}, got {count}")
    out_dir = out_dir.absolute()
    _clear_previous(out_dir, force)
    out_dir.mkdir(parents=True, exist_ok=True)
    tasks = [write_instance(out_dir, n, seed) for n in range(1, count + 1)]
    suite = {"schemaVersion": 1, "suiteId": GENERATED_SUITE_ID, "suiteVersion": "1.0.0",
             "description": (f"{count} seeded chain-walk-rules instances written by `lab gen-stress` "
                             f"(seed {seed}): walk a {SEGMENTS}-segment chain across files and "
                             "write its tokens under three output rules stated once, one verifier "
                             "per rule. Live-only: no cassettes."),
             "tasks": tasks}
    (out_dir / "suite.json").write_bytes(dump_json(suite))
    return out_dir
