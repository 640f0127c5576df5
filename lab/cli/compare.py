"""`lab compare BASE CAND [json=true] [out=DIR] [tolerance=0.05]`: compare two reports (SPEC K1, K3, K5–K8).

BASE and CAND are each a ``report.json``, the directory holding one, or a run
id (``<suite>.v<version>.<cfg12>.<endpoint>.k<k>.s<seed>``, looked up in the run store). Without
``out`` the comparison is printed as Markdown (``json=true``: as JSON); with
``out=DIR`` it is written to ``DIR/comparison.json``, ``DIR/comparison.md`` and
``DIR/comparison.html``.

Exit codes: 0 compared (whatever the verdict), 1 usage error or a missing or
invalid report, 3 incompatible reports (different suite id or version).
"""

from __future__ import annotations

from pathlib import Path

USAGE = "usage: lab compare BASE CAND [json=true] [out=DIR] [tolerance=0.05]"
OPTIONS = ("json", "out", "tolerance")


def compare(args: list[str]) -> int:
    """Run ``lab compare``; returns the exit code (module docstring)."""
    from lab.cli.options import guarded

    return guarded("compare", lambda: _compare(args))


def _compare(args: list[str]) -> int:
    from lab import paths
    from lab.compare.verdicts import DEFAULT_TOLERANCE, compare_reports, render_comparison_markdown, write_comparison
    from lab.config.options import flag, fraction, split_args
    from lab.errors import ConfigError
    from lab.files import dumps_json
    from lab.store import load_report

    refs, options = split_args(args, OPTIONS)
    if len(refs) != 2:
        raise ConfigError(f"expected two reports, got {len(refs)}; {USAGE}")
    as_json = flag(options, "json")
    tolerance = fraction(options, "tolerance", DEFAULT_TOLERANCE)
    base, cand = (load_report(ref, paths.data_dir()) for ref in refs)
    doc = compare_reports(base.doc, cand.doc, tolerance=tolerance)
    if as_json:
        print(dumps_json(doc), end="")
    if options.get("out"):
        _, md_path = write_comparison(Path(options["out"]).absolute(), doc,
                                      reports=(base.report_dir, cand.report_dir))
        if not as_json:
            print(f"comparison: {md_path} (verdict: {doc['aggregate']['verdict']}); "
                  f"picture: {md_path.with_suffix('.html')}")
    elif not as_json:
        print(render_comparison_markdown(doc), end="")
    return 0
