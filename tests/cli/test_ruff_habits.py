"""What a ruff user reaches for (issue 16): severity on each line, --show-source, --statistics,
stdin, --extend-select/--extend-ignore, --output-format, rewrite's -q/--exit-zero and progress,
help without library internals in workflow order, 1-based notebook cells, "did you mean"."""

from __future__ import annotations

import io
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from neuron_migrate.cli import app

# As tests/cli/conftest.py: NM101 (a "cuda" device string) is an error, NM206 a warning.
ERROR_PY = 'import torch\n\nx = torch.zeros(2).to("cuda")\n'
WARNING_PY = "import torch\n\ntorch.cuda.synchronize()\n"


def _invoke(*args: str, input: str | None = None) -> Any:
    return CliRunner().invoke(app, list(args), input=input, catch_exceptions=False)


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in [n for n in __import__("os").environ if n.startswith("NEURON_MIGRATE_")]:
        monkeypatch.delenv(name)
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.delenv("FORCE_COLOR", raising=False)


# --- the text line ------------------------------------------------------------------------------


def test_every_text_line_names_its_severity(project: Callable[..., Path], cli: Callable[..., Any]) -> None:
    root = project()
    run = cli("scan", "--no-cache", "-q", cwd=root)
    assert run.exit_code == 1
    lines = run.stdout.splitlines()
    assert len(lines) == 2
    assert all(re.match(r"^\S+:\d+:\d+: NM\d{3} \[(error|warning|info)\] \S", line) for line in lines), lines
    assert "NM101 [error]" in run.stdout and "NM206 [warning]" in run.stdout


def test_show_source_prints_the_line_and_a_caret_under_the_span(project: Callable[..., Path],
                                                                cli: Callable[..., Any]) -> None:
    root = project(warning=False)
    run = cli("scan", "--no-cache", "-q", "--show-source", cwd=root)
    lines = run.stdout.splitlines()
    assert re.match(r"^err\.py:3:23: NM101 \[error\] ", lines[0])
    assert lines[1:4] == [
        "  |",
        '3 | x = torch.zeros(2).to("cuda")',
        "  |                       ^^^^^^",  # under "cuda", quotes included (the span)
    ]
    # without the flag: no context
    assert cli("scan", "--no-cache", "-q", cwd=root).stdout.splitlines() == lines[:1]


def test_show_source_caret_counts_characters_and_tabs(tmp_path: Path, cli: Callable[..., Any]) -> None:
    (tmp_path / "t.py").write_text('import torch\nnamé = "é";\ty = torch.zeros(1).to("cuda")\n', encoding="utf-8")
    run = cli("scan", "--no-cache", "-q", "--show-source", "--select", "NM101", cwd=tmp_path)
    source, carets = run.stdout.splitlines()[2:4]
    assert source == '2 | namé = "é"; y = torch.zeros(1).to("cuda")'
    assert source[carets.index("^"):][:6] == '"cuda"' and carets.count("^") == 6


# --- --statistics ---------------------------------------------------------------------------------


def test_statistics_counts_per_code_most_frequent_first(tmp_path: Path, cli: Callable[..., Any]) -> None:
    (tmp_path / "a.py").write_text(ERROR_PY + 'y = torch.ones(1).to("cuda")\n' + WARNING_PY, encoding="utf-8")
    (tmp_path / "b.py").write_text(ERROR_PY, encoding="utf-8")
    run = cli("scan", "--no-cache", "--statistics", cwd=tmp_path)
    assert run.exit_code == 1  # the gate is the same whatever is printed
    rows = [line.split(None, 3) for line in run.stdout.splitlines()]
    assert [(n, code, sev) for n, code, sev, *_ in rows] == [("3", "NM101", "[error]"), ("1", "NM206", "[warning]")]
    assert all(len(row) == 4 and row[3].strip() for row in rows)  # each with the rule's title
    assert not any(line.startswith("a.py") for line in run.stdout.splitlines())


# --- stdin ----------------------------------------------------------------------------------------


def test_stdin_is_scanned_under_its_filename(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "src").mkdir()
    run = _invoke("scan", "-", "--stdin-filename", "src/train.py", "-q", input=ERROR_PY)
    assert run.exit_code == 1, run.output
    (line,) = run.stdout.splitlines()
    assert line.startswith("src/train.py:3:23: NM101 [error] ")
    assert not (tmp_path / "src" / "train.py").exists()  # nothing written beside it
    # --stdin-filename alone reads stdin too; a clean buffer exits 0
    assert _invoke("scan", "--stdin-filename", "src/ok.py", "-q", input="print(1)\n").exit_code == 0
    # `-` without a name
    plain = _invoke("scan", "-", "-q", "--format", "json", input=ERROR_PY)
    assert [f["path"] for f in json.loads(plain.stdout)["findings"]] == ["stdin.py"]


def test_stdin_uses_the_config_of_its_filename(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / ".neuron-migrate.toml").write_text('ignore = ["NM101"]\n', encoding="utf-8")
    run = _invoke("scan", "-", "--stdin-filename", "pkg/train.py", "-q", input=ERROR_PY + WARNING_PY)
    assert "NM101" not in run.stdout and "pkg/train.py:6:1: NM206" in run.stdout


def test_stdin_with_other_paths_is_a_usage_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a.py").write_text(ERROR_PY, encoding="utf-8")
    run = _invoke("scan", "a.py", "--stdin-filename", "x.py", input=ERROR_PY)
    assert run.exit_code == 2 and "stdin" in run.stderr


def test_rewrite_from_stdin_prints_the_diff_or_with_apply_the_fixed_source(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "src").mkdir()
    dry = _invoke("rewrite", "-", "--stdin-filename", "src/train.py", input=ERROR_PY)
    assert dry.exit_code == 1, dry.output  # a dry run leaves the finding in the buffer
    assert dry.stdout.startswith("--- a/src/train.py\n+++ b/src/train.py\n")
    assert '+x = torch.zeros(2).to("neuron")' in dry.stdout and "Would change 1 file" in dry.stderr
    fixed = _invoke("rewrite", "--stdin-filename", "src/train.py", "--apply", input=ERROR_PY)
    assert fixed.exit_code == 0, fixed.output
    assert fixed.stdout == ERROR_PY.replace('"cuda"', '"neuron"')  # the whole buffer, nothing else
    assert not list(tmp_path.rglob("*.py"))  # nothing written beside it
    # a buffer without fixes comes back as it went in; -q keeps stderr empty
    clean = "import torch\n\nprint(torch.ones(1))\n"
    quiet = _invoke("rewrite", "-", "--apply", "-q", input=clean)
    assert quiet.stdout == clean and quiet.stderr == "" and quiet.exit_code == 0


def test_rewrite_from_stdin_keeps_the_buffers_bytes_and_uses_its_config(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / ".neuron-migrate.toml").write_text('target = "accelerator"\n', encoding="utf-8")
    source = ERROR_PY.replace("\n", "\r\n")
    run = CliRunner().invoke(app, ["rewrite", "-", "--stdin-filename", "pkg/t.py", "--apply", "--format", "json"],
                             input=source.encode(), catch_exceptions=False)
    report = json.loads(run.stdout)
    assert report["extras"]["target"] == "accelerator" and report["extras"]["fixed"] == 1
    assert [f["path"] for f in report["extras"]["files"]] == ["pkg/t.py"]
    crlf = CliRunner().invoke(app, ["rewrite", "-", "--apply", "-q"], input=source.encode(), catch_exceptions=False)
    assert crlf.stdout_bytes == source.replace('"cuda"', '"neuron"').encode()  # CRLF kept


def test_rewrite_needs_a_path_and_rewrites_stdin_alone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a.py").write_text(ERROR_PY, encoding="utf-8")
    nothing = _invoke("rewrite")
    assert nothing.exit_code == 2 and "needs a PATH" in nothing.stderr
    both = _invoke("rewrite", "-", "a.py", input=ERROR_PY)
    assert both.exit_code == 2 and "stdin" in both.stderr
    assert (tmp_path / "a.py").read_text(encoding="utf-8") == ERROR_PY


# --- selection --------------------------------------------------------------------------------------


def test_extend_select_and_extend_ignore_on_the_cli(project: Callable[..., Path], cli: Callable[..., Any]) -> None:
    root = project()
    (root / ".neuron-migrate.toml").write_text('select = ["NM101"]\n', encoding="utf-8")
    assert "NM206" not in cli("scan", "--no-cache", "-q", cwd=root).stdout
    run = cli("scan", "--no-cache", "-q", "--extend-select", "NM206", cwd=root)
    assert "NM101" in run.stdout and "NM206" in run.stdout  # added to the config's select, not replacing it
    (root / ".neuron-migrate.toml").write_text('ignore = ["NM206"]\n', encoding="utf-8")
    run = cli("scan", "--no-cache", "-q", "--extend-ignore", "NM101", cwd=root)
    assert run.stdout == "" and run.exit_code == 0  # both ignored: the config's and the CLI's


def test_extend_select_enables_a_rule_outside_the_default_selection(tmp_path: Path,
                                                                      cli: Callable[..., Any]) -> None:
    (tmp_path / "ids.py").write_text("import torch\n\nids = torch.arange(10, dtype=torch.int64)\n", encoding="utf-8")
    assert "NM803" not in cli("scan", "--no-cache", "-q", cwd=tmp_path).stdout  # off by default
    run = cli("scan", "--no-cache", "-q", "--extend-select", "NM803", cwd=tmp_path)
    assert "ids.py:3:30: NM803 [info]" in run.stdout
    assert "NM803" not in cli("scan", "--no-cache", "-q", "--extend-select", "NM803", "--extend-ignore", "NM8",
                              cwd=tmp_path).stdout  # ignore still wins


def test_extend_keys_in_config_add_up_across_layers(project: Callable[..., Path], cli: Callable[..., Any]) -> None:
    root = project()
    (root / "pyproject.toml").write_text('[tool.neuron-migrate]\nextend-ignore = ["NM101"]\n', encoding="utf-8")
    run = cli("scan", "--no-cache", "-q", cwd=root)
    assert "NM101" not in run.stdout and "NM206" in run.stdout
    run = cli("scan", "--no-cache", "-q", "--extend-ignore", "NM206", cwd=root)
    assert run.stdout == ""
    shown = json.loads(cli("config", "--format", "json", cwd=root).stdout)
    assert json.dumps(shown).count("extend-ignore") >= 1


def test_output_format_is_an_alias_of_format(project: Callable[..., Path], cli: Callable[..., Any]) -> None:
    root = project()
    run = cli("scan", "--no-cache", "--output-format", "json", cwd=root)
    assert {f["code"] for f in json.loads(run.stdout)["findings"]} == {"NM101", "NM206"}
    rewritten = cli("rewrite", ".", "--no-cache", "--output-format", "json", cwd=root)
    assert json.loads(rewritten.stdout)["command"] == "rewrite"


# --- rewrite ----------------------------------------------------------------------------------------


def test_rewrite_quiet_and_exit_zero(project: Callable[..., Path], cli: Callable[..., Any]) -> None:
    root = project()
    loud = cli("rewrite", ".", "--no-cache", cwd=root)
    assert loud.exit_code == 1 and loud.stderr.strip()  # the summary of what changed
    quiet = cli("rewrite", ".", "--no-cache", "-q", cwd=root)
    assert quiet.stderr == "" and quiet.stdout == loud.stdout and '+x = torch.zeros(2).to("neuron")' in quiet.stdout
    assert cli("rewrite", ".", "--no-cache", "--exit-zero", cwd=root).exit_code == 0
    assert cli("rewrite", ".", "--no-cache", "--exit-zero", "--select", "NOPE", cwd=root).exit_code == 2


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_bars_count_files_only_on_a_terminal_and_for_long_runs() -> None:
    from neuron_migrate.cli.console import PROGRESS_MIN_FILES, ProgressBars

    tty = _Tty()
    with ProgressBars(True, tty) as bars:
        scanning, fixing = bars.stage("scanning"), bars.stage("fixing")
        assert scanning is not None and fixing is not None
        for done in range(1, PROGRESS_MIN_FILES + 1):
            scanning(done, PROGRESS_MIN_FILES)
        fixing(3, 5)  # a short stage: no bar
    shown = tty.getvalue()
    assert f"{PROGRESS_MIN_FILES}/{PROGRESS_MIN_FILES}" in shown and "scanning" in shown and "files" in shown
    assert "fixing" not in shown
    assert ProgressBars(True, io.StringIO()).stage("scanning") is None  # a pipe: nothing
    assert ProgressBars(False, tty).stage("scanning") is None  # --quiet


def test_rewrite_reports_fix_progress(tmp_path: Path) -> None:
    from neuron_migrate import api

    for i in range(3):
        (tmp_path / f"m{i}.py").write_text(ERROR_PY, encoding="utf-8")
    (tmp_path / "clean.py").write_text("print(1)\n", encoding="utf-8")
    heard: list[tuple[int, int]] = []
    api.rewrite([tmp_path], use_cache=False, jobs=1, fix_progress=lambda d, t: heard.append((d, t)))
    assert heard == [(1, 3), (2, 3), (3, 3)]


# --- help ---------------------------------------------------------------------------------------------


def test_commands_are_listed_in_workflow_order() -> None:
    out = _invoke("--help").stdout
    listed = re.findall(r"^  (\w+)\s", out.split("Commands:")[1], re.MULTILINE)
    assert listed == ["scan", "rewrite", "check", "report", "diff", "rules", "explain", "config"]


@pytest.mark.parametrize("command", ["scan", "rewrite", "check", "report", "diff", "rules", "explain", "config"])
def test_help_shows_no_library_internals(command: str) -> None:
    out = _invoke(command, "--help").stdout
    assert not re.search(r"<[a-z_]+\[|<int range>|INTEGER RANGE|list\[|Path\]|\bPATHS\.\.\.", out), out


# --- notebooks ------------------------------------------------------------------------------------------


def test_notebook_cells_are_numbered_from_one_in_text_and_zero_in_json(tmp_path: Path,
                                                                        cli: Callable[..., Any]) -> None:
    cells = [{"cell_type": "markdown", "metadata": {}, "source": "# title"},
             {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
              "source": 'import torch\nx = torch.zeros(1).to("cuda")\n'}]
    (tmp_path / "nb.ipynb").write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4,
                                                   "nbformat_minor": 5}), encoding="utf-8")
    text = cli("scan", "--no-cache", "-q", "--select", "NM101", cwd=tmp_path).stdout
    assert text.startswith("nb.ipynb:cell[2]:2:23: NM101")  # the second cell, as notebook editors number it
    data = json.loads(cli("scan", "--no-cache", "--format", "json", "--select", "NM101", cwd=tmp_path).stdout)
    assert [f["cell"] for f in data["findings"]] == [1]  # JSON keeps the 0-based index (documented)


# --- config keys ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("wrong", "right"), [("fail_on", "fail-on"), ("per_file_ignores", "per-file-ignores"),
                                              ("selct", "select"), ("extend_ignore", "extend-ignore")])
def test_unknown_config_key_suggests_the_close_one(wrong: str, right: str, project: Callable[..., Path],
                                                   cli: Callable[..., Any]) -> None:
    root = project()
    value = '{}' if "per" in wrong else ('"warning"' if wrong == "fail_on" else '["NM1"]')
    (root / ".neuron-migrate.toml").write_text(f"{wrong} = {value}\n", encoding="utf-8")
    run = cli("scan", "--no-cache", cwd=root)
    assert run.exit_code == 2
    assert f"unknown key '{wrong}'; did you mean '{right}'?" in run.stderr


def test_unknown_config_key_far_from_any_says_no_guess(project: Callable[..., Path], cli: Callable[..., Any]) -> None:
    root = project()
    (root / ".neuron-migrate.toml").write_text("colour = true\n", encoding="utf-8")
    run = cli("scan", "--no-cache", cwd=root)
    assert run.exit_code == 2 and "unknown key 'colour'" in run.stderr and "did you mean" not in run.stderr
