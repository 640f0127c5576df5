"""The doit graph: every run record and every report is a file target (SPEC X4, R7, VA2, K1, E1).

``cmdline`` reads doit's command line and builds its configuration;
``graph`` composes one eval (config, suite, plan) and yields its tasks: one per
run record, the report, the closing summary; ``actions`` is what those tasks
execute; ``ci`` is the CI replay gate over every bundled cassette;
``variants`` runs variants interleaved and compares them; ``compare_export``
holds the ``doit compare`` and ``doit export`` targets; ``multirun`` is
``lab run -m`` (Hydra multirun); ``commands`` runs any of them in-process
(``lab run``, ``run_suite``) and lists the creators ``dodo.py`` exposes;
``api`` is the Python API's ``run_eval`` (callbacks, typed summary).
``inputs`` says what a run depends on and saves ``config.json``; ``records``
says when a run record is current and keeps the record index a no-op judges
records by; ``summary`` remembers the closing summary per version of its report;
``claims`` lets two commands on one data dir execute each run once;
``depdb`` checks the data dir and keeps doit's dependency DB usable under
faults (docs/faults.md).

May import: lab.execute and everything below it (config, suites, agents,
replay, providers, sandbox, compare, export, report, bottom modules).
Never lab.cli.
"""
