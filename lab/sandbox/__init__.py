"""Where a run's commands execute: the task copy and the processes run in it.

``workspace`` creates the fresh copy of a fixture, snapshots and diffs its
tree and confines paths to it; ``process`` runs one command in its own
session with a deadline, bounded output and a process-group kill. Isolation
backends (bubblewrap, none; a container backend later) live here behind one
interface.

May import: lab.errors and the standard library only.
"""
