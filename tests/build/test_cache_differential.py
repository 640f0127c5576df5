"""Differential test of every memo (SPEC X10): random edits between commands, each warm command
compared with a build without caches (tests/helpers/cache_differential.py).

Bounded here (the first command, then two to four edits at once, each check three real ``doit eval``
processes); ``benchmarks/cache_differential.py`` runs many more checks, one to three edits each.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, rule, run_state_machine_as_test

from tests.helpers.cache_differential import EDITS, Lab

pytestmark = pytest.mark.slow


def test_every_warm_command_equals_a_build_without_caches(tmp_path: Path) -> None:
    labs: list[Lab] = []

    class Edits(RuleBasedStateMachine):
        @initialize()
        def first_command(self) -> None:
            if not labs:  # one copy of the lab for every example: its state carries over
                labs.append(Lab.make(tmp_path))
                assert labs[0].check() == []

        @rule(names=st.lists(st.sampled_from(sorted(EDITS)), min_size=2, max_size=4),
              seed=st.integers(0, 2**16))
        def edit_then_compare(self, names: list[str], seed: int) -> None:
            lab, rnd = labs[0], random.Random(seed)
            done = [f"{name}: {EDITS[name](lab, rnd)}" for name in names]
            problems = lab.check()
            assert problems == [], f"after {done}:\n" + "\n".join(problems)

    run_state_machine_as_test(Edits, settings=settings(max_examples=1, stateful_step_count=1, deadline=None,
                                                       database=None, derandomize=True,
                                                       suppress_health_check=list(HealthCheck)))
