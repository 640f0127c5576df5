"""Record and replay of provider traffic (SPEC R1–R7): the cassette format,
request normalisation and fingerprints, divergence paths.

``cassette`` holds the ``cassette/v1`` reader and writer, the Recorder and
the Replayer that wrap a provider. ``normalise`` turns a request from a
program the lab does not control into its comparable form (volatile fields
dropped, volatile text masked, numbers canonicalised) and ``matching`` serves
recordings by content, in recorded order, naming the first differing field
on a miss. A replay divergence is detected in
``lab/replay/cassette.py`` (the Replayer compares each request's fingerprint
with the recording as JSON values and names the first differing field).
``fingerprint`` holds JSON equality (``1 == 1.0``, ``true != 1``) and the
request fingerprint, for any matcher of recorded traffic. ``layout`` says
where a cassette lives (cheap to import).

May import: lab.providers (the Provider protocol, exchanges), lab.export
(secret redaction before a cassette is written) and the bottom modules.
"""
