"""Settings: precedence CLI > env > .neuron-migrate.toml > pyproject.toml > defaults, with sources;
errors name the key and the file."""

from __future__ import annotations

from pathlib import Path

import pytest

from neuron_migrate.config import FailOn, PerFileIgnore, load_settings
from neuron_migrate.errors import ConfigError
from neuron_migrate.findings import Severity, Target


def _project(tmp_path: Path, pyproject: str = "", dotfile: str | None = None) -> Path:
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'x'\n\n[tool.neuron-migrate]\n" + pyproject)
    if dotfile is not None:
        (tmp_path / ".neuron-migrate.toml").write_text(dotfile)
    src = tmp_path / "src" / "pkg"
    src.mkdir(parents=True)
    return src


def test_defaults_without_config(tmp_path: Path) -> None:
    s = load_settings(tmp_path, environ={})
    assert s.fail_on is FailOn.ERROR and s.target is Target.NEURON and s.respect_gitignore
    assert s.config_files == () and s.source("fail-on") == "default"


def test_precedence_and_sources(tmp_path: Path) -> None:
    src = _project(
        tmp_path,
        pyproject='fail-on = "info"\ntarget = "accelerator"\nselect = ["NM1"]\nexclude = ["build/**"]\n',
        dotfile='fail-on = "warning"\nselect = ["NM2"]\n',
    )
    env = {"NEURON_MIGRATE_SELECT": "NM3,NM101", "NEURON_MIGRATE_UNRELATED": "x"}
    s = load_settings(src, {"fail-on": "never", "ignore": None}, environ=env, cwd=tmp_path)
    assert s.fail_on is FailOn.NEVER and s.source("fail-on") == "cli"
    assert s.select == ("NM3", "NM101") and s.source("select") == "env NEURON_MIGRATE_SELECT"
    assert s.target is Target.ACCELERATOR and s.source("target") == str(tmp_path / "pyproject.toml")
    assert s.exclude == ("build/**",)
    assert s.source("ignore") == "default"
    assert s.config_files == (tmp_path / "pyproject.toml", tmp_path / ".neuron-migrate.toml")
    # without CLI and env, the dotfile beats pyproject.toml
    s = load_settings(src, environ={})
    assert s.fail_on is FailOn.WARNING and s.source("fail-on") == str(tmp_path / ".neuron-migrate.toml")
    assert s.select == ("NM2",)


def test_pyproject_without_our_table_is_skipped(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.neuron-migrate]\nfail-on = "info"\n')
    inner = tmp_path / "sub"
    inner.mkdir()
    (inner / "pyproject.toml").write_text("[project]\nname = 'inner'\n")
    s = load_settings(inner, environ={})
    assert s.fail_on is FailOn.INFO and s.config_files == (tmp_path / "pyproject.toml",)


def test_explicit_config_file_replaces_discovery(tmp_path: Path) -> None:
    src = _project(tmp_path, pyproject='fail-on = "info"\n')
    other = tmp_path / "ci.toml"
    other.write_text('fail-on = "warning"\n')
    s = load_settings(src, config_file=other, environ={})
    assert s.fail_on is FailOn.WARNING and s.config_files == (other.resolve(),)
    with pytest.raises(ConfigError, match="not found"):
        load_settings(src, config_file=tmp_path / "missing.toml", environ={})


@pytest.mark.parametrize("body, key", [
    ("colour = true\n", "colour"),
    ('fail-on = "sometimes"\n', "fail-on"),
    ("select = \"NM1\"\n", "select"),
    ('select = ["E501"]\n', "select"),
    ('severity = {NM201 = "fatal"}\n', "severity"),
    ("unsafe-fixes = 3\n", "unsafe-fixes"),
    ("max-recompiles = -1\n", "max-recompiles"),
    ('format = "xml"\n', "format"),
    ('exit-zero = true\n', "exit-zero"),
])
def test_bad_keys_name_key_and_file(tmp_path: Path, body: str, key: str) -> None:
    src = _project(tmp_path, pyproject=body)
    with pytest.raises(ConfigError) as info:
        load_settings(src, environ={})
    message = str(info.value)
    assert f"'{key}'" in message and str(tmp_path / "pyproject.toml") in message


def test_invalid_toml_names_the_file(tmp_path: Path) -> None:
    (tmp_path / ".neuron-migrate.toml").write_text("fail-on = \n")
    with pytest.raises(ConfigError, match=r"\.neuron-migrate\.toml: invalid TOML"):
        load_settings(tmp_path, environ={})


def test_bad_env_value_names_the_variable(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="NEURON_MIGRATE_RESPECT_GITIGNORE.*'respect-gitignore'"):
        load_settings(tmp_path, environ={"NEURON_MIGRATE_RESPECT_GITIGNORE": "maybe"})


def test_tables_paths_and_per_file_ignores(tmp_path: Path) -> None:
    src = _project(
        tmp_path,
        pyproject=(
            'extra-rules = ["team/rules.yaml"]\ncache-dir = ".cache/nm"\nbaseline = "nm-baseline.json"\n'
            'severity = {NM2 = "info", nm201 = "error"}\n'
            '[tool.neuron-migrate.per-file-ignores]\n"tests/**" = ["NM1"]\n"*.ipynb" = ["NM201", "NM3"]\n'
        ),
    )
    s = load_settings(src, environ={}, cwd=src)
    assert s.extra_rules == (tmp_path / "team" / "rules.yaml",)  # relative to the config file
    assert s.cache_dir == tmp_path / ".cache" / "nm" and s.baseline == tmp_path / "nm-baseline.json"
    assert dict(s.severity) == {"NM2": Severity.INFO, "NM201": Severity.ERROR}
    assert s.per_file_ignores == (
        PerFileIgnore("tests/**", ("NM1",), tmp_path),
        PerFileIgnore("*.ipynb", ("NM201", "NM3"), tmp_path),
    )
    # from the environment: a TOML inline table; from the CLI: paths relative to the working dir
    s = load_settings(src, {"cache-dir": "here"}, environ={"NEURON_MIGRATE_SEVERITY": '{NM101 = "warning"}'},
                      cwd=src)
    assert dict(s.severity) == {"NM101": Severity.WARNING} and s.cache_dir == src.resolve() / "here"


def test_to_dict_lists_every_key(tmp_path: Path) -> None:
    from neuron_migrate.config import SETTING_KEYS

    assert list(load_settings(tmp_path, environ={}).to_dict()) == list(SETTING_KEYS)
