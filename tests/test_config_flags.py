"""Hydra's flags on `lab run`: words --cfg and --info do not know are one line and exit 1."""

from __future__ import annotations

import pytest

from lab.cli import main


@pytest.mark.parametrize(("argv", "line"), [
    (["--cfg", "hydra"], "lab run: --cfg hydra: expected job or all (default job) (the lab fixes Hydra's own "
                         "settings; --cfg job shows what a run uses)"),
    (["--cfg", "bogus"], "lab run: --cfg bogus: expected job or all (default job)"),
    (["-c", "bogus", "k=1"], "lab run: -c bogus: expected job or all (default job)"),
    (["--info", "bogus"], "lab run: --info bogus: expected all, config, defaults, defaults-tree, plugins, "
                          "searchpath (default all)"),
    (["--cfg", "job", "stray"], "lab run: --cfg: 'stray' is neither a flag nor a KEY=VALUE override"),
    (["--cfg", "job", "--cfg", "hydra"], "lab run: --cfg: given 2 times; give it once"),
    (["-c", "job", "k=2", "--cfg"], "lab run: -c: given 2 times; give it once"),
    (["--info", "-i", "config"], "lab run: --info: given 2 times; give it once"),
])
def test_unknown_words_are_one_line_and_exit_1(argv: list[str], line: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", *argv]) == 1
    out, err = capsys.readouterr()
    assert (out, err.strip().splitlines()) == ("", [line])


@pytest.mark.parametrize("argv", [["--info"], ["--info", "searchpath"], ["-i", "all"]])
def test_hydras_info_topics_print_the_info_page(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", *argv]) == 0
    out = capsys.readouterr().out
    assert "(groups: suite, provider, mode, agent, variant, sandbox, executor)" in out and "results:" in out


def test_cfg_all_still_prints_the_measured_view(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "--cfg", "all", "k=2"]) == 0
    out = capsys.readouterr().out
    assert "\nk: 2\n" in out and "# measured view" in out
