"""Seeded ``chain-walk-rules-NN`` instances and the ``chain-walk-format-rule`` baseline (SPEC S7).

An instance is a workspace holding a chain of 16 segment files plus decoys.
``start.txt`` names segment 1; each segment file carries a ``token: <t>`` line
and a ``next: <path>`` line naming the next segment (``next: END`` on segment
16). Comment lines (``#``) and decoy files carry stale tokens and paths.

Every instance's prompt states the same three rules of the walk report, once
(:data:`RULES`): each segment's line is ``NN~CODE`` with the code (its token)
in upper case, the first line is ``# walk-report``, the last line is
``-- end of walk --`` followed by a single newline. Each rule has its own
command verifier (an inline check printing ``RULE-<n>-… OK``) and the walk has
one more (``walk``: the 16 tokens in order, whatever their format), so a
report shows which rule a run dropped, apart from a wrong walk.

The baseline ``chain-walk-format-rule`` (:func:`generate_baseline`) is the
older task kept unchanged beside them: one ambiguous rule ("formatted
``NN~CODE``") and one verifier reading it strictly.

Instance ``n`` draws its files and tokens from ``seed + n`` (the baseline from
``seed``) through :class:`Draw` (sha256 of ``"<seed>:<counter>"``), not from
:mod:`random`, whose derived methods may change between Python versions: the
same (index, seed) gives identical bytes everywhere. ``lab gen-stress`` writes
instances 1..N with :func:`write_suite`; instances 1-5 are the ones bundled in
``suites/long-context-stress``, beside the baseline.
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
GENERATED_SUITE_VERSION = "2.0.0"  # 2.0.0: the walk-report rules, the same in every instance
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



# ---------------------------------------------------------------- the walk report
# Every instance states the same three rules (the design's walk-report format), once, in its
# prompt; each rule has a verifier of its own and the walk itself one more, so a report shows
# which rule a run dropped apart from whether it walked the chain right. A check is Python run by
# `python3 -c` in the workspace after the prelude below: T is result.txt's exact text (no newline
# translation; None when the file is missing), L its lines split at "\n", C the chain tokens in
# walk order (lower case), K every token of the instance. It sets ok and why.
Chain = tuple[list[str], list[str]]  # (tokens in walk order, paths in walk order)

HEADER = "# walk-report"
FOOTER = "-- end of walk --"
RULES: tuple[tuple[str, str, str], ...] = (
    ("rule-1-nn-code-upper",
     "Each segment gets one line, in walk order, of the form `NN~CODE`: NN is the segment's number "
     "as two digits (01 for segment 1, ..., 16 for segment 16) and CODE is the segment's token in "
     "upper case (segment 3 with token `token-07` is the line `03~TOKEN-07`).",
     "B=[l for l in L if l.strip() and l not in (H,F)]\n"
     "bad=[l for i,l in enumerate(B) if not re.fullmatch('%02d~[A-Z0-9-]*[A-Z][A-Z0-9-]*'%(i+1),l)]\n"
     "ok=len(B)==16 and not bad\nwhy='%d segment lines; not NN~CODE with NN its number and CODE upper case: %s'"
     "%(len(B),bad[:4])\n"),
    ("rule-2-walk-report-header",
     f"The first line of the file is exactly `{HEADER}`.",
     "ok=L[:1]==[H]\nwhy='first line %r'%L[:1]\n"),
    ("rule-3-end-of-walk-footer",
     f"The last line of the file is exactly `{FOOTER}`, and the file ends with a single newline "
     "after it (no empty line follows).",
     "ok=T is not None and (T==F+'\\n' or T.endswith('\\n'+F+'\\n'))\n"
     "why='the file ends with %r'%(T or '')[-40:]\n"),
)
"""(verifier id, the rule's sentence in the prompt, check body) of rules 1, 2, 3."""
WALK_CHECK = ("walk", "G=[t for l in L for t in re.findall('[a-z]+-[0-9]+',l.lower()) if t in K]\n"
              "ok=G==C\nwhy='tokens in order: %s'%G\n")
"""The walk verifier: the 16 tokens in walk order, read from the lines whatever their format or case."""

_PRELUDE = ("import pathlib,re,sys\np=pathlib.Path({result!r})\n"
            "T=p.read_bytes().decode('utf-8','replace') if p.is_file() else None\n"
            "L=(T or '').split('\\n')\nL=L[:-1] if L[-1:]==[''] else L\n"
            "C={tokens!r}\nK=set(C+{decoys!r})\nH={header!r}\nF={footer!r}\n")
_EPILOGUE = ("if T is None:\n    ok,why=False,'no {result}'\n"
             "print('{name} OK' if ok else '{name} FAIL: '+why[:300])\nsys.exit(0 if ok else 1)\n")


def _verifier(verifier_id: str, body: str, chain: Chain, decoys: list[str]) -> dict[str, Any]:
    """A command verifier running ``body`` (after the prelude) on result.txt; it prints ``<ID> OK``."""
    name = verifier_id.upper()
    code = (_PRELUDE.format(result=RESULT_FILE, tokens=chain[0], decoys=decoys, header=HEADER, footer=FOOTER)
            + body + _EPILOGUE.format(result=RESULT_FILE, name=name))
    return {"id": verifier_id, "kind": "command", "argv": ["python3", "-c", code], "timeoutMs": 30000,
            "expectExit": 0, "expectStdoutIncludes": f"{name} OK"}


def expected_output(chain: Chain) -> str:
    """The text of result.txt that keeps the three rules (and the walk)."""
    lines = [f"{n:02d}~{token.upper()}" for n, token in enumerate(chain[0], 1)]
    return "\n".join([HEADER, *lines, FOOTER]) + "\n"


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


def _prompt(instructions: str) -> str:
    return (
        f"This workspace holds a chain of {SEGMENTS} segment files. start.txt names the file "
        "of segment 1. In each segment file, the line that begins with `token: ` gives that "
        "segment's token and the line that begins with `next: ` gives the workspace-relative "
        f"path of the next segment's file; `next: END` marks segment {SEGMENTS}, the last. "
        "Lines that begin with `#` are comments; ignore them. Files you do not reach by "
        f"following the chain are not part of it. Walk the whole chain and write {RESULT_FILE}"
        f"{instructions}\nDo not change any other file.")


RULES_PROMPT = (", a walk report, following these three rules:\n"
                + "\n".join(f"{n}. {text}" for n, (_, text, _) in enumerate(RULES, 1))
                + "\nThe rules are stated only here.")
"""What a chain-walk-rules prompt asks for after "write result.txt"."""
BASELINE_ID = "chain-walk-format-rule"
BASELINE_PROMPT = ", one line per segment in walk order, formatted `NN~CODE`."
"""The baseline's request: one ambiguous format rule (how wide is NN? is CODE the token as
written, or in capitals as the placeholder is? anything else in the file?) judged by one
verifier that reads it strictly: the 16 lines ``NN~CODE`` with a two-digit NN and the token
in upper case, nothing else."""
_BASELINE_CHECK = ("W=['%02d~%s'%(i,t.upper()) for i,t in enumerate(C,1)]\nB=[l for l in L if l.strip()]\n"
                   "ok=B==W\nwhy='lines %s ..., expected %s ...'%(B[:2],W[:2])\n")


def _walk_task(task_id: str, draw: Draw, instructions: str, checks: Sequence[tuple[str, str]], tags: list[str],
               answer: Callable[[Chain], str]) -> tuple[dict[str, Any], dict[str, str], dict[str, Any]]:
    """(task, files, script) of one chain walk drawn from ``draw``; ``checks``: (verifier id, check body)."""
    chain_paths, decoy_paths, tokens = _layout(draw)
    files = _files(draw, chain_paths, decoy_paths, tokens)
    chain: Chain = (tokens[:SEGMENTS], chain_paths)
    task = {
        "id": task_id, "prompt": _prompt(instructions),
        "fixture": f"fixtures/{task_id}",
        "budget": {"maxTurns": 40, "maxWallMs": 900000, "maxTokens": 2000000, "maxToolCalls": 60},
        "policy": {"mode": "auto", "allow": ["write"], "readOnly": False},
        "verifiers": [_verifier(vid, body, chain, tokens[SEGMENTS:]) for vid, body in checks],
        "tags": tags, "fixtureGit": False,
    }
    reads = [{"toolCalls": [{"name": "read_file", "arguments": {"path": path}}]}
             for path in ["start.txt", *chain_paths]]
    script = {"schemaVersion": 1, "taskId": task_id, "turns": [
        *reads,
        {"toolCalls": [{"name": "write_file", "arguments": {"path": RESULT_FILE, "content": answer(chain)}}]},
        {"content": f"DONE: walked {SEGMENTS} segments and wrote {RESULT_FILE}."}]}
    return task, files, script


def generate_instance(index: int, seed: int = DEFAULT_SEED,
                      ) -> tuple[dict[str, Any], dict[str, str], dict[str, Any]]:
    """Build chain-walk-rules instance ``index`` from ``seed + index``.

    Every instance states the three rules of :data:`RULES` and has four
    verifiers: one per rule, then ``walk``.

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
    checks = [(vid, body) for vid, _, body in RULES] + [WALK_CHECK]
    return _walk_task(f"{TASK_PREFIX}{index:02d}", Draw(seed + index), RULES_PROMPT, checks,
                      ["chain-walk", "live-only", "stress"], expected_output)


def generate_baseline(seed: int = DEFAULT_SEED) -> tuple[dict[str, Any], dict[str, str], dict[str, Any]]:
    """The ``chain-walk-format-rule`` baseline (its workspace drawn from ``seed`` itself, instance 0).

    The older task, kept unchanged beside the instances so that their pass
    rates can be read against it: one ambiguous rule (:data:`BASELINE_PROMPT`),
    one verifier ``format-rule`` for everything. Same return value as
    :func:`generate_instance`.
    """
    def answer(chain: Chain) -> str:
        return "".join(f"{n:02d}~{token.upper()}\n" for n, token in enumerate(chain[0], 1))

    return _walk_task(BASELINE_ID, Draw(seed), BASELINE_PROMPT, [("format-rule", _BASELINE_CHECK)],
                      ["chain-walk", "live-only", "stress", "baseline"], answer)


# ---------------------------------------------------------------- writing


def dump_json(doc: Any) -> bytes:
    """The byte form of every JSON file written here: 2-space indent, trailing newline."""
    return (json.dumps(doc, indent=2, ensure_ascii=False) + "\n").encode("utf-8")


def write_instance(suite_dir: Path, index: int, seed: int = DEFAULT_SEED) -> dict[str, Any]:
    """Write instance ``index``'s fixture and script under ``suite_dir`` (0: the baseline); return its task entry."""
    task, files, script = generate_instance(index, seed) if index else generate_baseline(seed)
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
    suite = {"schemaVersion": 1, "suiteId": GENERATED_SUITE_ID, "suiteVersion": GENERATED_SUITE_VERSION,
             "description": (f"{count} seeded chain-walk-rules instances written by `lab gen-stress` "
                             f"(seed {seed}): walk a {SEGMENTS}-segment chain across files and "
                             "write a walk report under three rules stated once, one verifier "
                             "per rule and one for the walk. Live-only: no cassettes."),
             "tasks": tasks}
    (out_dir / "suite.json").write_bytes(dump_json(suite))
    return out_dir
