"""A variants command is keyed by its overrides: only an identical command shares its runs."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from lab.build.variants import command_key

WORDS = st.lists(st.sampled_from(["suite=core", "k=2", "k=3", "jobs=1", "jobs=4", "seed=1", "variant=a,b",
                                  "provider.model=m1,m2", "tasks=[x]"]), unique=True, max_size=6)


@given(WORDS, st.randoms())
def test_order_does_not_matter(words: list[str], rng: object) -> None:
    shuffled = list(words)
    rng.shuffle(shuffled)  # type: ignore[attr-defined]
    assert command_key(shuffled) == command_key(words)


@given(WORDS, st.sampled_from(["out=/tmp/x", "json=true", "progress=true", "force=true", "yes=true"]))
def test_output_only_keys_are_left_out(words: list[str], output: str) -> None:
    assert command_key([*words, output]) == command_key(words)


def test_jobs_and_k_change_the_key() -> None:
    base = ["suite=core", "variant=a,b", "k=2"]
    assert command_key([*base, "jobs=4"]) != command_key(base)
    assert command_key(["suite=core", "variant=a,b", "k=3"]) != command_key(base)
