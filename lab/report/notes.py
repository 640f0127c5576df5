"""The notes a report and an eval's banner print for replayed and scripted runs (cheap to import)."""

REPLAY_NOTE = ("Replay measures the harness alone, deterministically: "
               "a replay says nothing about model quality.")
SCRIPTED_NOTE = "scripted provider: fixed answers; measures the harness, not a model"
