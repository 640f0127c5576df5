"""Suites (SPEC S1–S7): load, validate, digest, path safety, where a suite comes from.

``load`` validates ``suite.json`` against its JSON Schema plus semantic checks
and reports every error at once, naming suite, task and field; ``paths``
keeps fixture and verifier paths inside the suite (no ``..``, absolute paths
or escaping symlinks) and computes the content digest; ``source`` resolves
``suite=``/``suite_dir=``/``suite.path=`` to a loaded suite (bundled or
third-party); ``stress`` generates seeded ``chain-walk-rules`` instances;
``validate`` checks the JSON Schema in linear time; ``text`` decides text and
numbers at load time (excerpts, lone surrogates, integral floats); ``tree``
lists the suite directory once for every file check and the digest, and reads
files only when they are regular files; ``scripts`` checks the tasks'
scripted-provider scripts at load time; ``cache`` gives back a suite an
earlier command loaded while none of its files changed.

May import: the bottom modules (errors, paths, schemas, canonical, stamps),
and ``lab.providers.scripted`` (``scripts``: a script is judged by the
provider's own validation).
"""
