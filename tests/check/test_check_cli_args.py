"""check's command line: the program's arguments only after `--`, our options before the program,
bad limits and destinations refused before anything runs, user text printed as is."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.check.conftest import run_cli


def _program(tmp_path: Path, body: str = "open('ran', 'w').write('yes')\n") -> Path:
    script = tmp_path / "prog.py"
    script.write_text(body)
    return script


@pytest.mark.parametrize("after", [["--format", "json"], ["--format=json"], ["-q"], ["--steps", "6"], ["extra"]])
def test_anything_between_the_script_and_dashes_is_a_usage_error(tmp_path: Path, after: list[str],
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    result = run_cli([str(_program(tmp_path)), *after])
    assert result.exit_code == 2
    assert "`--`" in result.stderr
    if after[0].startswith(("--format", "-q")):
        assert "neuron-migrate option" in result.stderr and "before" in result.stderr
    assert not (tmp_path / "ran").exists()  # refused before running anything


def test_pytest_options_before_dashes_are_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    result = run_cli(["--pytest", "tests/", "--format", "json"])
    assert result.exit_code == 2 and "neuron-migrate option" in result.stderr
    result = run_cli(["--pytest", "tests/", "-k", "model"])
    assert result.exit_code == 2 and "after `--`" in result.stderr


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "0", "-3"])
def test_a_timeout_must_be_finite_and_positive(tmp_path: Path, value: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    result = run_cli(["--timeout", value, str(_program(tmp_path))])
    assert result.exit_code == 2 and "--timeout" in result.stderr
    assert not (tmp_path / "ran").exists()


@pytest.mark.parametrize("dest", ["missing/dir/report.json", "."])
def test_an_impossible_output_is_refused_before_the_program_runs(tmp_path: Path, dest: str,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    result = run_cli(["--output-json", dest, str(_program(tmp_path))])
    assert result.exit_code == 2 and ("cannot write" in result.stderr or "is a directory" in result.stderr)
    assert not (tmp_path / "ran").exists()


@pytest.mark.slow
def test_user_text_is_not_rendered_as_emoji_or_markup(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    script = _program(tmp_path, "raise ValueError('bad value at train.py:100:9 [bold]x[/bold] :smile:')\n")
    result = run_cli([str(script), "--", "a"])
    assert result.exit_code == 1
    assert "train.py:100:9 [bold]x[/bold] :smile:" in result.stdout
    assert "\U0001f4af" not in result.stdout and "\U0001f604" not in result.stdout
