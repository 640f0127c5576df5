"""Record and replay of provider traffic (SPEC R1-R5, G4).

The cassette format, request normalisation (volatile fields dropped,
volatile text masked, numbers canonicalised), content matching of requests
against recordings in recorded order, and the divergence paths that name the
first differing field.

May import: ``lab.errors``, ``lab.providers``, the standard library and
third-party packages; nothing above it (no config, execute, agents, gateway).
"""
