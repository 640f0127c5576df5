"""Sharing results outside the machine (SPEC E1–E3): the export bundle,
secret scanning, path scrubbing.

``bundle`` writes one JSON bundle per run (scrubbed paths, secrets checked);
``secrets`` finds credentials in text (detect-secrets plugins plus the
configured keys) and is also used before a cassette is written;
``credentials`` names what is a credential by name alone (headers,
environment variables), cheap to import.

May import: lab.store and the bottom modules.
"""
