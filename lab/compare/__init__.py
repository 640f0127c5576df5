"""Comparing reports (SPEC K1–K5): per-task verdicts, the paired aggregate verdict,
deltas, the admission rule, and gates over reports.

``verdicts`` (compare_reports, comparison.json), ``deltas`` (tokens, time,
cost, cached-input deltas), ``markdown`` (comparison.md), ``html``
(comparison.html), ``admit`` (may a
change become a default?), ``gate`` (the CI verdict over one report, and over
the replayed suites of ``lab ci``).

May import: lab.report (the figures and the Wilson interval) and the bottom
modules (store, files, paths, errors, schemas).
"""
