"""doit's database as the lab reads and saves it (lab.build.depdb.LabSqliteDB): a task's saved state
read with its siblings' in one query, and nothing written when nothing changed."""

from __future__ import annotations

from pathlib import Path

from doit.dependency import JSONCodec

from lab.build.depdb import LabSqliteDB
from lab.stamps import stamp

TASKS = {"eval:s.v1.cfg.t1.s0-r0": 1, "eval:s.v1.cfg.t1.s0-r1": 2, "eval:s.v1.cfg.t2.s0-r0": 3,
         "eval:s.v1.cfg.t10.s0-r0": 4, "eval:plain": 5}


def saved(db: Path) -> LabSqliteDB:
    backend = LabSqliteDB(str(db), codec=JSONCodec())
    for task, value in TASKS.items():
        backend.set(task, "_values_:", {"n": value})
        backend.set(task, "deps:", ["a", "b"])
    backend.dump()
    return LabSqliteDB(str(db), codec=JSONCodec())


def test_every_task_reads_back_its_own_state(tmp_path: Path) -> None:
    backend = saved(tmp_path / "db.sqlite")
    for task, value in reversed(TASKS.items()):
        assert backend.get(task, "_values_:") == {"n": value}, task
    assert backend.get("eval:s.v1.cfg.t1.s0-r9", "_values_:") is None
    assert backend.get("eval:s.v1.cfg.t3.s0-r0", "_values_:") is None


def test_a_state_saved_again_unchanged_is_not_written(tmp_path: Path) -> None:
    db = tmp_path / "db.sqlite"
    backend = saved(db)
    before = stamp(db)
    backend.set("eval:s.v1.cfg.t1.s0-r0", "_values_:", {"n": 1})
    backend.set("eval:s.v1.cfg.t1.s0-r0", "deps:", ("a", "b"))  # a tuple, saved as a list: the same
    backend.dump()
    assert stamp(db) == before
    again = LabSqliteDB(str(db), codec=JSONCodec())
    again.set("eval:s.v1.cfg.t1.s0-r0", "_values_:", {"n": 99})
    again.dump()
    assert LabSqliteDB(str(db), codec=JSONCodec()).get("eval:s.v1.cfg.t1.s0-r0", "_values_:") == {"n": 99}


def test_a_removed_state_stays_removed(tmp_path: Path) -> None:
    db = tmp_path / "db.sqlite"
    backend = saved(db)
    assert backend.get("eval:s.v1.cfg.t1.s0-r0", "deps:") == ["a", "b"]
    backend.remove("eval:s.v1.cfg.t1.s0-r1")
    assert backend.get("eval:s.v1.cfg.t1.s0-r1", "deps:") is None
    backend.remove_all()
    assert backend.get("eval:s.v1.cfg.t2.s0-r0", "deps:") is None
