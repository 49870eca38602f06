"""Effective settings: CLI > `NEURON_MIGRATE_<FLAG>` env > `.neuron-migrate.toml` > pyproject.toml
`[tool.neuron-migrate]` > defaults, with the source of every value.

Both files are found by walking up from the first scanned path (each independently: the nearest
`.neuron-migrate.toml`, and the nearest `pyproject.toml` that has a `[tool.neuron-migrate]` table);
`--config FILE` replaces that discovery with one file. Keys are kebab-case and equal the CLI flags.
Paths in a file (extra-rules, cache-dir, baseline, per-file-ignores globs) are relative to that
file's directory; paths from the CLI or environment are relative to the working directory.

Environment values: lists are comma-separated (`NEURON_MIGRATE_SELECT=NM1,NM201`), booleans
`1/0/true/false/yes/no/on/off`, tables are TOML inline tables
(`NEURON_MIGRATE_SEVERITY='{NM201 = "error"}'`).
"""

from __future__ import annotations

import os
import re
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from enum import StrEnum
from pathlib import Path
from types import MappingProxyType
from typing import Any

from neuron_migrate.errors import ConfigError
from neuron_migrate.findings import Severity, Target

PYPROJECT = "pyproject.toml"
DOTFILE = ".neuron-migrate.toml"
ENV_PREFIX = "NEURON_MIGRATE_"
# The report formats a run may ask for (`format`, `--format`): the keys of neuron_migrate.emit.FORMATS,
# named here so settings are checked without importing the emitters (a test keeps the two equal).
REPORT_FORMATS = ("text", "json", "sarif", "junit", "github", "markdown")
# A code or a code prefix (NM, NM1, NM20, NM201) or ALL: what --select/--ignore accept.
SELECTOR_RE = re.compile(r"^(NM\d{0,3}|ALL)$")


class FailOn(StrEnum):
    ERROR = "error"
    WARNING = "warning"
    INFO = "info"
    NEVER = "never"


@dataclass(frozen=True, slots=True)
class PerFileIgnore:
    glob: str  # gitignore-style glob, relative to `base`
    codes: tuple[str, ...]  # codes or prefixes
    base: Path  # directory of the file that declared it (cwd for env)


@dataclass(frozen=True, slots=True)
class Settings:
    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    select: tuple[str, ...] = ()  # empty: the pack's default selection
    ignore: tuple[str, ...] = ()
    # Added to `select`/`ignore` rather than replacing them; every layer's values add up
    # (a config file's extend-select plus the CLI's --extend-select), as in ruff.
    extend_select: tuple[str, ...] = ()
    extend_ignore: tuple[str, ...] = ()
    severity: Mapping[str, Severity] = field(default_factory=lambda: MappingProxyType({}))
    fail_on: FailOn = FailOn.ERROR
    target: Target = Target.NEURON
    unsafe_fixes: bool = False
    extra_rules: tuple[Path, ...] = ()
    per_file_ignores: tuple[PerFileIgnore, ...] = ()
    respect_gitignore: bool = True
    cache_dir: Path | None = None
    format: str = "text"
    baseline: Path | None = None
    max_recompiles: int | None = None  # check
    max_fallback_ops: int | None = None  # check
    allow_ops: tuple[str, ...] = ()  # check
    # Per-run options: CLI only, never read from files or the environment.
    exit_zero: bool = False
    write_baseline: Path | None = None
    diff_against: str | None = None
    fail_on_kinds: frozenset[str] = frozenset()  # check's `--fail-on fallback,recompile` kinds
    # Where each value came from: key -> "default" | "cli" | "env NEURON_MIGRATE_X" | file path.
    sources: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    config_files: tuple[Path, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """The effective settings by config key, JSON-ready (`neuron-migrate config --format json`)."""
        out: dict[str, Any] = {}
        for key, attr in _ATTR.items():
            out[key] = _jsonable(getattr(self, attr))
        return out

    def source(self, key: str) -> str:
        return self.sources.get(key, "default")


def _jsonable(value: Any) -> Any:
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, StrEnum):
        return value.value
    if isinstance(value, PerFileIgnore):
        return {"glob": value.glob, "codes": list(value.codes), "base": str(value.base)}
    if isinstance(value, Mapping):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, tuple):
        return [_jsonable(v) for v in value]
    return value


# ---- one parser per value kind; `where` names the file/env var and key for errors --------------


class _Bad(Exception):
    """A value of the wrong shape; turned into ConfigError naming key and file."""


def _str_list(value: Any) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise _Bad(f"expected a list of strings, got {value!r}")
    return tuple(value)


def _glob_problem(glob: str) -> str | None:
    """Why a gitignore-style glob cannot be compiled (`[z-a]`), or None."""
    import pathspec

    try:
        pathspec.GitIgnoreSpec.from_lines([glob])
    except (re.error, ValueError, TypeError) as e:
        return getattr(e, "msg", None) or str(e) or type(e).__name__  # re.error.msg: without the regex position
    return None


def _globs(value: Any) -> tuple[str, ...]:
    items = _str_list(value)
    for glob in items:
        problem = _glob_problem(glob)
        if problem is not None:
            raise _Bad(f"{glob!r} is not a valid glob ({problem})")
    return items


def _selectors(value: Any) -> tuple[str, ...]:
    items = tuple(s.upper() for s in _str_list(value))
    bad = [s for s in items if not SELECTOR_RE.match(s)]
    if bad:
        raise _Bad(f"{bad[0]!r} is not a rule code, a prefix (like NM201 or NM2) or ALL")
    return items


def _enum(cls: type[StrEnum]) -> Callable[[Any], Any]:
    def parse(value: Any) -> Any:
        try:
            return cls(value.lower() if isinstance(value, str) else value)
        except ValueError:
            raise _Bad(f"expected one of {', '.join(m.value for m in cls)}, got {value!r}") from None

    return parse


def _bool(value: Any) -> bool:
    if not isinstance(value, bool):
        raise _Bad(f"expected true or false, got {value!r}")
    return value


def _int(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise _Bad(f"expected a non-negative integer, got {value!r}")
    return value


def _table(value: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise _Bad(f"expected a table, got {value!r}")
    return value


def _severity_table(value: Any) -> Mapping[str, Severity]:
    out: dict[str, Severity] = {}
    for code, level in _table(value).items():
        (selector,) = _selectors([code])
        try:
            out[selector] = Severity(str(level).lower())
        except ValueError:
            raise _Bad(f"{code}: expected error, warning or info, got {level!r}") from None
    return MappingProxyType(out)


def _paths(base: Path) -> Callable[[Any], tuple[Path, ...]]:
    return lambda value: tuple((base / p) for p in _str_list(value))


def _path(base: Path) -> Callable[[Any], Path]:
    def parse(value: Any) -> Path:
        if not isinstance(value, (str, os.PathLike)) or not str(value):
            raise _Bad(f"expected a path, got {value!r}")
        return base / value

    return parse


def _per_file(base: Path) -> Callable[[Any], tuple[PerFileIgnore, ...]]:
    def parse(value: Any) -> tuple[PerFileIgnore, ...]:
        out = []
        for glob, codes in _table(value).items():
            problem = _glob_problem(glob)
            if problem is not None:
                raise _Bad(f"{glob!r} is not a valid glob ({problem})")
            try:
                out.append(PerFileIgnore(glob, _selectors(codes), base))
            except _Bad as e:
                raise _Bad(f"{glob!r}: {e}") from None
        return tuple(out)

    return parse


# Config key -> (Settings attribute, parser factory taking the base directory for paths).
_KEYS: dict[str, tuple[str, Callable[[Path], Callable[[Any], Any]]]] = {
    "include": ("include", lambda b: _globs),
    "exclude": ("exclude", lambda b: _globs),
    "select": ("select", lambda b: _selectors),
    "ignore": ("ignore", lambda b: _selectors),
    "extend-select": ("extend_select", lambda b: _selectors),
    "extend-ignore": ("extend_ignore", lambda b: _selectors),
    "severity": ("severity", lambda b: _severity_table),
    "fail-on": ("fail_on", lambda b: _enum(FailOn)),
    "target": ("target", lambda b: _enum(Target)),
    "unsafe-fixes": ("unsafe_fixes", lambda b: _bool),
    "extra-rules": ("extra_rules", _paths),
    "per-file-ignores": ("per_file_ignores", _per_file),
    "respect-gitignore": ("respect_gitignore", lambda b: _bool),
    "cache-dir": ("cache_dir", _path),
    "format": ("format", lambda b: _format),
    "baseline": ("baseline", _path),
    "max-recompiles": ("max_recompiles", lambda b: _int),
    "max-fallback-ops": ("max_fallback_ops", lambda b: _int),
    "allow-ops": ("allow_ops", lambda b: _str_list),
}
_ATTR = {key: attr for key, (attr, _) in _KEYS.items()}
# Per-run options accepted from the CLI only.
_CLI_ONLY: dict[str, tuple[str, Callable[[Path], Callable[[Any], Any]]]] = {
    "exit-zero": ("exit_zero", lambda b: _bool),
    "write-baseline": ("write_baseline", _path),
    "diff-against": ("diff_against", lambda b: _nonempty),
}


def _nonempty(value: Any) -> str:
    if not isinstance(value, str) or not value:
        raise _Bad(f"expected a non-empty string, got {value!r}")
    return value


def _format(value: Any) -> str:
    if value not in REPORT_FORMATS:
        raise _Bad(f"expected one of {', '.join(REPORT_FORMATS)}, got {value!r}")
    return str(value)


def env_var(key: str) -> str:
    return ENV_PREFIX + key.upper().replace("-", "_")


_LIST_KEYS = frozenset({"include", "exclude", "select", "ignore", "extend-select", "extend-ignore", "extra-rules",
                        "allow-ops"})
_EXTEND_KEYS = frozenset({"extend-select", "extend-ignore"})  # layers add up instead of replacing
_TABLE_KEYS = frozenset({"severity", "per-file-ignores"})
_BOOL_KEYS = frozenset({"unsafe-fixes", "respect-gitignore", "exit-zero"})
_INT_KEYS = frozenset({"max-recompiles", "max-fallback-ops"})
_TRUE, _FALSE = ("1", "true", "yes", "on"), ("0", "false", "no", "off")


def _from_text(key: str, text: str) -> Any:
    """An environment value as the TOML value it stands for (lists comma-separated, tables inline)."""
    if key in _LIST_KEYS:
        return [v.strip() for v in text.split(",") if v.strip()]
    if key in _TABLE_KEYS:
        try:
            return tomllib.loads(f"v = {text}")["v"]
        except tomllib.TOMLDecodeError as e:
            raise _Bad(f"expected a TOML inline table like {{NM201 = \"error\"}}: {e}") from None
        except RecursionError:
            raise _Bad("expected a TOML inline table: nested too deeply") from None
    if key in _BOOL_KEYS and text.lower() in _TRUE + _FALSE:
        return text.lower() in _TRUE
    if key in _INT_KEYS and text.strip().isdigit():
        return int(text)
    return text


# ---- discovery and layering ---------------------------------------------------------------------


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as fh:
            return tomllib.load(fh)
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"{path}: invalid TOML: {e}") from None
    except RecursionError:
        raise ConfigError(f"{path}: invalid TOML: nested too deeply") from None
    except UnicodeDecodeError as e:
        line = e.object[: e.start].count(b"\n") + 1
        raise ConfigError(f"{path}: invalid TOML: not UTF-8 text (line {line})") from None
    except OSError as e:
        raise ConfigError(f"{path}: cannot read: {e.strerror or e}") from None


def _tool_table(path: Path, data: dict[str, Any]) -> dict[str, Any] | None:
    tool = data.get("tool", {})
    table = tool.get("neuron-migrate") if isinstance(tool, dict) else None
    if table is not None and not isinstance(table, dict):
        raise ConfigError(f"{path}: [tool.neuron-migrate] must be a table")
    return table


def _layer_of(path: Path) -> dict[str, Any] | None:
    """The neuron-migrate table of a config file (None: a pyproject.toml without one)."""
    data = _read_toml(path)
    return _tool_table(path, data) if path.name == PYPROJECT else data


def discover(start: Path) -> list[Path]:
    """Config files that apply to `start`, lowest precedence first (pyproject, then dotfile)."""
    here = Path(os.path.realpath(start))  # never raises: a symlink loop is reported by the scan itself
    if not here.is_dir():
        here = here.parent
    found: dict[str, Path] = {}
    for directory in (here, *here.parents):
        dot = directory / DOTFILE
        if DOTFILE not in found and dot.is_file():
            found[DOTFILE] = dot
        pyproject = directory / PYPROJECT
        if PYPROJECT not in found and pyproject.is_file() and _layer_of(pyproject) is not None:
            found[PYPROJECT] = pyproject
        if len(found) == 2:
            break
    return [found[name] for name in (PYPROJECT, DOTFILE) if name in found]


def _did_you_mean(key: str) -> str:
    """`; did you mean 'fail-on'?` for `fail_on`, `failon`, `fail-onn`; "" when nothing is close."""
    import difflib

    known = [*_KEYS, *_CLI_ONLY]
    spelled = key.lower().replace("_", "-") if isinstance(key, str) else ""
    if spelled in known:
        return f"; did you mean '{spelled}'?"
    close = difflib.get_close_matches(spelled, known, n=1, cutoff=0.75)
    return f"; did you mean '{close[0]}'?" if close else ""


def _parse(key: str, value: Any, base: Path, where: str, *, text: bool = False) -> tuple[str, Any]:
    """(Settings attribute, parsed value) for one key; errors name the key and where it was set.

    `text`: the value is a string from the environment or the command line (`--select NM1,NM2`).
    """
    spec = _KEYS.get(key) or _CLI_ONLY.get(key)
    if spec is None:
        raise ConfigError(f"{where}: unknown key '{key}'{_did_you_mean(key)} (known keys: {', '.join(_KEYS)})")
    try:
        if text and isinstance(value, str):
            value = _from_text(key, value)
        return spec[0], spec[1](base)(value)
    except _Bad as e:
        raise ConfigError(f"{where}: key '{key}': {e}") from None


def _set(values: dict[str, Any], sources: dict[str, str], key: str, attr: str, parsed: Any, source: str) -> None:
    """One layer's value: it replaces the lower layers' value, or adds to it for extend-* keys."""
    if key in _EXTEND_KEYS and attr in values:
        values[attr] = values[attr] + tuple(v for v in parsed if v not in values[attr])
        sources[key] = f"{sources[key]} + {source}"
    else:
        values[attr] = parsed
        sources[key] = source


def load_settings(
    start: Path,
    cli_overrides: Mapping[str, Any] | None = None,
    *,
    config_file: Path | None = None,
    environ: Mapping[str, str] | None = None,
    cwd: Path | None = None,
) -> Settings:
    """Resolve the settings for a run over `start` (the first path given on the command line).

    `cli_overrides` maps kebab-case keys to values the user gave (None or absent: not given);
    list values may be comma-separated strings, as in the environment.
    """
    environ = os.environ if environ is None else environ
    cwd = (cwd or Path.cwd()).resolve()
    values: dict[str, Any] = {}
    sources: dict[str, str] = {}

    if config_file is not None:
        if not config_file.is_file():
            raise ConfigError(f"{config_file}: config file not found")
        files = [config_file.resolve()]
    else:
        files = discover(start)
    for path in files:
        layer = _layer_of(path)
        if layer is None:
            raise ConfigError(f"{path}: no [tool.neuron-migrate] table")
        where = f"{path} [tool.neuron-migrate]" if path.name == PYPROJECT else str(path)
        for key, value in layer.items():
            if key in _CLI_ONLY:
                raise ConfigError(f"{where}: key '{key}' is a per-run option (command line only)")
            attr, parsed = _parse(key, value, path.parent, where)
            _set(values, sources, key, attr, parsed, str(path))

    for key in _KEYS:
        name = env_var(key)
        if name in environ:
            attr, parsed = _parse(key, environ[name], cwd, f"environment variable {name}", text=True)
            _set(values, sources, key, attr, parsed, f"env {name}")

    for key, value in (cli_overrides or {}).items():
        if value is None:
            continue
        attr, parsed = _parse(key, value, cwd, f"command line option --{key}", text=True)
        _set(values, sources, key, attr, parsed, "cli")

    return replace(
        Settings(), **values, sources=MappingProxyType(sources), config_files=tuple(files)
    )


SETTING_KEYS: tuple[str, ...] = tuple(_KEYS)
