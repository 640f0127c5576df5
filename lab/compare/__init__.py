"""Comparing reports (SPEC K1–K8): per-task verdicts, the aggregate verdict,
power, deltas, the admission rule, and gates over reports.

``verdicts`` (compare_reports, comparison.json), ``inference`` (Newcombe,
Fisher, Holm, the stratified permutation test), ``power`` (power and sample
size), ``decide`` (verdicts from counts), ``aggregate`` (the tested parts of
comparison.json), ``deltas`` (tokens, time,
cost, cached-input deltas), ``markdown`` (comparison.md), ``html``
(comparison.html), ``admit`` (may a
change become a default?), ``gate`` (the CI verdict over one report, and over
the replayed suites of ``lab ci``), ``power`` (detectable differences and
sample sizes), ``plan`` (``lab plan``), ``sequential`` and ``sequential_doc``
(the group-sequential test of ``lab variants … sequential=true``).

May import: lab.report (the figures and the Wilson interval) and the bottom
modules (store, files, paths, errors, schemas).
"""
