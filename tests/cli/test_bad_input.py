"""Bad input never crashes the tool: every case below is a short message on stderr that names the
file (and the line or key where there is one), exit code 2, no traceback, and no file written or
changed. Each case was found by attacking the installed CLI from the outside."""

from __future__ import annotations

import copy
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from neuron_migrate.record.build import RecordError, validate
from neuron_migrate.record.diff import compare, render_markdown, render_text

CUDA_PY = "import torch\n\nx = torch.zeros(2).cuda()\n"

# A rule of one's own that loads cleanly; cases below break one field of it.
GOOD_RULE = """\
rules:
  - code: NM199
    name: my-rule
    title: t
    category: device
    severity: error
    since: "0.1.0"
    match: {device_strings: [cuda]}
    fix: {class: manual}
    message: m
    why: w
    references: []
    examples: {invalid: [{code: "x = 1\\n"}], valid: ["y = 2\\n"]}
"""

Setup = Callable[[Path], None]


def _files(**files: str | bytes) -> Setup:
    """Writes `name=content` files (`__` in a name stands for `/`) next to a.py."""

    def setup(root: Path) -> None:
        for name, content in files.items():
            path = root / name.replace("__", "/")
            path.parent.mkdir(parents=True, exist_ok=True)
            if isinstance(content, bytes):
                path.write_bytes(content)
            else:
                path.write_text(content, encoding="utf-8")

    return setup


def _entry(**fields: Any) -> dict[str, Any]:
    return {"fingerprint": "0" * 20, "code": "NM102", "path": "a.py", "symbol": ".cuda()", "count": 1, **fields}


def _baseline(**fields: Any) -> str:
    return json.dumps({"format": "neuron-migrate-baseline", "version": 1, "entries": [], **fields})


# (id, setup, argv, env, words the message must hold)
CASES: list[tuple[str, Setup, list[str], dict[str, str], list[str]]] = [
    # scan: paths, options and output files
    ("scan-missing-path", _files(), ["scan", "missing.py"], {}, ["missing.py", "no such file"]),
    ("scan-select-unknown-code", _files(), ["scan", "a.py", "--select", "NM999"], {}, ["NM999"]),
    ("scan-select-garbage", _files(), ["scan", "a.py", "--select", "garbage"], {}, ["--select", "GARBAGE"]),
    ("scan-fail-on-bogus", _files(), ["scan", "a.py", "--fail-on", "bogus"], {}, ["--fail-on", "bogus"]),
    ("scan-format-bogus", _files(), ["scan", "a.py", "--format", "bogus"], {}, ["--format", "bogus"]),
    ("scan-output-no-dir", _files(), ["scan", "a.py", "-o", "nodir/x.txt"], {}, ["nodir/x.txt", "does not exist"]),
    ("scan-junit-group", _files(), ["scan", "a.py", "--junit-group", "x"], {}, ["--junit-group"]),
    # scan: baselines
    ("baseline-missing", _files(), ["scan", "a.py", "--baseline", "b.json"], {}, ["b.json", "not found"]),
    ("baseline-not-json", _files(**{"b.json": "{"}), ["scan", "a.py", "--baseline", "b.json"], {},
     ["b.json", "not valid JSON"]),
    ("baseline-not-utf8", _files(**{"b.json": b"\xff\xfe"}), ["scan", "a.py", "--baseline", "b.json"], {},
     ["b.json", "cannot read"]),
    ("baseline-list", _files(**{"b.json": "[]"}), ["scan", "a.py", "--baseline", "b.json"], {},
     ["b.json", "not a neuron-migrate baseline"]),
    ("baseline-version", _files(**{"b.json": _baseline(version=99)}), ["scan", "a.py", "--baseline", "b.json"], {},
     ["b.json", "version 99"]),
    ("baseline-entries", _files(**{"b.json": _baseline(entries=[5])}), ["scan", "a.py", "--baseline", "b.json"],
     {}, ["b.json", "entry 0"]),
    ("diff-against-outside-git", _files(), ["scan", "a.py", "--diff-against", "HEAD"], {}, ["git"]),
    *((f"baseline-count-{name}", _files(**{"b.json": _baseline(entries=[_entry(count=count)])}),
       ["scan", "a.py", "--baseline", "b.json"], {}, ["b.json", "entry 0", '"count" must be a whole number'])
      for name, count in (("string", "2"), ("float", 1.5), ("bool", True), ("huge", 1e30), ("big-int", 10**40),
                          ("zero", 0), ("null", None))),
    ("baseline-fingerprint-not-a-string", _files(**{"b.json": _baseline(entries=[_entry(fingerprint={"a": 1})])}),
     ["scan", "a.py", "--baseline", "b.json"], {}, ["b.json", "entry 0", '"fingerprint" must be a string']),
    ("baseline-deeply-nested", _files(**{"b.json": '{"entries": ' + "[" * 100_000 + "]" * 100_000 + "}"}),
     ["scan", "a.py", "--baseline", "b.json"], {}, ["b.json", "nested too deeply"]),
    # globs that are no pattern, from every source
    ("exclude-bad-range", _files(), ["scan", "a.py", "--exclude", "[z-a]"], {}, ["--exclude", "'[z-a]'", "not a valid glob"]),
    ("include-bad-range-rewrite", _files(), ["rewrite", "a.py"], {"NEURON_MIGRATE_INCLUDE": "[z-a]"},
     ["NEURON_MIGRATE_INCLUDE", "'[z-a]'"]),
    ("exclude-bad-range-env", _files(), ["scan", "a.py"], {"NEURON_MIGRATE_EXCLUDE": "ok/*,[z-a]"},
     ["NEURON_MIGRATE_EXCLUDE", "'[z-a]'"]),
    ("exclude-bad-range-config", _files(**{"pyproject.toml": '[tool.neuron-migrate]\nexclude = ["[z-a]"]\n'}),
     ["scan", "a.py"], {}, ["pyproject.toml", "'exclude'", "'[z-a]'", "not a valid glob"]),
    ("per-file-ignores-bad-range", _files(**{"pyproject.toml": '[tool.neuron-migrate]\nper-file-ignores = {"[z-a]" = ["NM1"]}\n'}),
     ["scan", "a.py"], {}, ["pyproject.toml", "per-file-ignores", "'[z-a]'"]),
    ("report-exclude-bad-range", _files(**{".neuron-migrate.toml": 'exclude = ["[z-a]"]\n'}), ["report", "."], {},
     [".neuron-migrate.toml", "'[z-a]'"]),
    # configuration files and the environment
    ("pyproject-syntax", _files(**{"pyproject.toml": "[tool.neuron-migrate\n"}), ["scan", "a.py"], {},
     ["pyproject.toml", "invalid TOML", "line 1"]),
    ("pyproject-not-utf8", _files(**{"pyproject.toml": b"[tool.neuron-migrate]\nselect = []\n# caf\xe9\n"}),
     ["scan", "a.py"], {}, ["pyproject.toml", "not UTF-8", "line 3"]),
    ("dotfile-syntax", _files(**{".neuron-migrate.toml": "select = ["}), ["scan", "a.py"], {},
     [".neuron-migrate.toml", "invalid TOML"]),
    ("dotfile-deeply-nested", _files(**{".neuron-migrate.toml": "x = " + "[" * 5000 + "]" * 5000 + "\n"}),
     ["scan", "a.py"], {}, [".neuron-migrate.toml", "nested too deeply"]),
    ("config-option-deeply-nested", _files(**{"c.toml": "x = " + "[" * 5000 + "]" * 5000 + "\n"}),
     ["scan", "a.py", "--config", "c.toml"], {}, ["c.toml", "nested too deeply"]),
    ("env-table-deeply-nested", _files(), ["scan", "a.py"], {"NEURON_MIGRATE_SEVERITY": "{a = " + "[" * 5000 + "]" * 5000 + "}"},
     ["NEURON_MIGRATE_SEVERITY", "nested too deeply"]),
    ("config-unknown-key", _files(**{"pyproject.toml": "[tool.neuron-migrate]\nbogus = 1\n"}), ["scan", "a.py"],
     {}, ["pyproject.toml", "unknown key 'bogus'"]),
    ("config-wrong-type", _files(**{"pyproject.toml": "[tool.neuron-migrate]\nselect = 5\n"}), ["scan", "a.py"],
     {}, ["pyproject.toml", "'select'", "list of strings"]),
    ("config-tool-not-table", _files(**{"pyproject.toml": "[tool]\nneuron-migrate = 3\n"}), ["scan", "a.py"],
     {}, ["pyproject.toml", "must be a table"]),
    ("config-per-file-ignores-glob", _files(**{"pyproject.toml": '[tool.neuron-migrate]\nper-file-ignores = {"t/*" = 3}\n'}),
     ["scan", "a.py"], {}, ["pyproject.toml", "per-file-ignores", "'t/*'"]),
    ("config-file-option-missing", _files(), ["scan", "a.py", "--config", "none.toml"], {}, ["none.toml", "not found"]),
    ("env-select", _files(), ["scan", "a.py"], {"NEURON_MIGRATE_SELECT": "bogus"}, ["NEURON_MIGRATE_SELECT"]),
    ("env-severity-table", _files(), ["scan", "a.py"], {"NEURON_MIGRATE_SEVERITY": "{"}, ["NEURON_MIGRATE_SEVERITY"]),
    ("env-bool", _files(), ["scan", "a.py"], {"NEURON_MIGRATE_UNSAFE_FIXES": "maybe"}, ["NEURON_MIGRATE_UNSAFE_FIXES"]),
    ("env-int", _files(), ["scan", "a.py"], {"NEURON_MIGRATE_MAX_RECOMPILES": "-1"}, ["NEURON_MIGRATE_MAX_RECOMPILES"]),
    # rule files of one's own
    ("rules-yaml-syntax", _files(**{"r.yaml": "rules: [\n"}), ["scan", "a.py", "--extra-rules", "r.yaml"], {},
     ["r.yaml", "invalid YAML", "line 2"]),
    ("rules-empty", _files(**{"r.yaml": "# nothing yet\n"}), ["scan", "a.py", "--extra-rules", "r.yaml"], {},
     ["r.yaml", "empty"]),
    ("rules-a-list", _files(**{"r.yaml": "- a\n"}), ["scan", "a.py", "--extra-rules", "r.yaml"], {},
     ["r.yaml", "expected a mapping"]),
    ("rules-missing", _files(), ["scan", "a.py", "--extra-rules", "r.yaml"], {}, ["r.yaml", "cannot read"]),
    ("rules-bad-severity", _files(**{"r.yaml": GOOD_RULE.replace("severity: error", "severity: loud")}),
     ["scan", "a.py", "--extra-rules", "r.yaml"], {}, ["r.yaml", "NM199", "'severity'"]),
    ("rules-bad-matcher", _files(**{"r.yaml": GOOD_RULE.replace("device_strings: [cuda]", "calls: [x]")}),
     ["rules", "--extra-rules", "r.yaml"], {}, ["r.yaml", "NM199", "match.calls"]),
    ("rules-unknown-fixer", _files(**{"r.yaml": GOOD_RULE.replace("{class: manual}", "{class: safe, neuron: {fixer: nope}}")}),
     ["explain", "NM199", "--extra-rules", "r.yaml"], {}, ["r.yaml", "NM199", "fixer"]),
    ("rules-python-tag", _files(**{"r.yaml": 'x: !!python/object:os.system "echo"\n'}),
     ["scan", "a.py", "--extra-rules", "r.yaml"], {}, ["r.yaml", "invalid YAML"]),
    # rewrite
    ("rewrite-missing-path", _files(), ["rewrite", "missing.py"], {}, ["missing.py"]),
    ("rewrite-target", _files(), ["rewrite", "a.py", "--target", "gpu"], {}, ["--target", "gpu"]),
    ("rewrite-format", _files(), ["rewrite", "a.py", "--format", "xml"], {}, ["--format", "xml"]),
    ("rewrite-pyproject-not-utf8", _files(**{"pyproject.toml": b"\xff"}), ["rewrite", "--apply", "a.py"], {},
     ["pyproject.toml", "not UTF-8"]),
    # rules, explain, config
    ("explain-unknown", _files(), ["explain", "NM999"], {}, ["NM999", "unknown rule code"]),
    ("explain-prefix", _files(), ["explain", "nm1"], {}, ["prefix", "neuron-migrate rules NM1"]),
    ("rules-selector", _files(), ["rules", "bogus"], {}, ["bogus"]),
    ("config-missing-path", _files(), ["config", "missing"], {}, ["missing", "no such file"]),
    ("config-not-utf8", _files(**{"pyproject.toml": b"\xff"}), ["config", "."], {}, ["pyproject.toml", "not UTF-8"]),
    ("config-format", _files(), ["config", ".", "--format", "yaml"], {}, ["--format"]),
    # report and diff
    ("report-missing-path", _files(), ["report", "missing"], {}, ["missing", "no such file"]),
    ("report-output-no-dir", _files(), ["report", ".", "--output-html", "nodir/r.html"], {}, ["nodir/r.html"]),
    ("report-run-missing-script", _files(), ["report", ".", "--run", "nope.py"], {}, ["nope.py"]),
    ("diff-missing", _files(), ["diff", "old.json", "new.json"], {}, ["old.json", "no such file"]),
    ("diff-not-json", _files(**{"old.json": "not json", "new.json": "{}"}), ["diff", "old.json", "new.json"], {},
     ["old.json", "not JSON", "line 1"]),
    ("diff-deeply-nested", _files(**{"old.json": "[" * 100_000 + "]" * 100_000}), ["diff", "old.json", "old.json"], {},
     ["old.json", "nested too deeply"]),
    ("diff-truncated", _files(**{"old.json": '{"kind": "neuron-migrate-record",\n "scan": {'}),
     ["diff", "old.json", "old.json"], {}, ["old.json", "not JSON", "line 2"]),
    ("diff-wrong-kind", _files(**{"old.json": "[]"}), ["diff", "old.json", "old.json"], {},
     ["old.json", "not a neuron-migrate record"]),
    ("diff-schema-version", _files(**{"old.json": '{"kind": "neuron-migrate-record", "schema_version": 9}'}),
     ["diff", "old.json", "old.json"], {}, ["old.json", "schema_version 9"]),
    ("diff-format", _files(), ["diff", "a.py", "a.py", "--format", "html"], {}, ["--format"]),
]


@pytest.mark.parametrize(("setup", "argv", "env", "words"), [pytest.param(*c[1:], id=c[0]) for c in CASES])
def test_bad_input_is_a_message_and_exit_2(
    setup: Setup, argv: list[str], env: dict[str, str], words: list[str], tmp_path: Path,
    cli: Callable[..., Any], monkeypatch: pytest.MonkeyPatch,
) -> None:
    (tmp_path / "a.py").write_text(CUDA_PY, encoding="utf-8")
    setup(tmp_path)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    before = _snapshot(tmp_path)
    run = cli(*argv, cwd=tmp_path)
    assert run.exit_code == 2, run
    assert "Traceback" not in run.stderr and "internal error" not in run.stderr, run
    message = run.stderr.strip()
    for word in words:
        assert word in message, run
    assert len(message.splitlines()) <= 3, run  # short: one line from us (usage errors: typer's box)
    assert _snapshot(tmp_path) == before, "a failed run must leave the directory as it was"


def _snapshot(root: Path) -> dict[str, bytes]:
    """Every file under root with its bytes (the scan cache, if any, left out)."""
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and ".neuron-migrate-cache" not in p.parts
    }


def test_a_bad_output_path_writes_nothing_at_all(tmp_path: Path, cli: Callable[..., Any]) -> None:
    """With several outputs, one bad destination fails the run before any file (or baseline) is written."""
    (tmp_path / "a.py").write_text(CUDA_PY, encoding="utf-8")
    run = cli("scan", "a.py", "--no-cache", "-o", "report.txt", "--output-sarif", "out.sarif",
              "--write-baseline", "base.json", "--output-json", "nodir/r.json", cwd=tmp_path)
    assert run.exit_code == 2 and "nodir/r.json" in run.stderr, run
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.py"]


def test_an_unwritable_output_names_the_destination_not_a_temporary_file(
    tmp_path: Path, cli: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    import tempfile

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise PermissionError(13, "Permission denied", str(tmp_path / ".out.json.x.tmp"))

    (tmp_path / "a.py").write_text(CUDA_PY, encoding="utf-8")
    monkeypatch.setattr(tempfile, "mkstemp", refuse)
    run = cli("scan", "a.py", "--no-cache", "-o", "out.json", "-f", "json", cwd=tmp_path)
    assert run.exit_code == 2, run
    assert run.stderr.strip() == "neuron-migrate: error: out.json: cannot write: Permission denied"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.py"]


def _surrogate_name(directory: Path, name: bytes) -> Path:
    """A path whose name is not UTF-8, or a skip where the file system refuses one (macOS, Windows)."""
    if sys.platform != "linux":
        pytest.skip("only Linux file systems take names that are not UTF-8")
    path = Path(os.fsdecode(os.fsencode(directory) + b"/" + name))
    try:
        path.mkdir() if not name.endswith(b".py") else path.write_text(CUDA_PY, encoding="utf-8")
    except OSError:
        pytest.skip("this file system refuses names that are not UTF-8")
    return path


@pytest.mark.parametrize("fmt", ["text", "json", "sarif", "junit", "github", "markdown"])
def test_a_file_name_that_is_not_utf8_is_reported_escaped(fmt: str, tmp_path: Path, cli: Callable[..., Any]) -> None:
    _surrogate_name(tmp_path, b"bad\xffname.py")
    run = cli("scan", ".", "--no-cache", "--format", fmt, cwd=tmp_path)
    assert run.exit_code == 1, run
    assert "xffname.py" in run.stdout and not run.stderr, run  # escaped as the format escapes a backslash


def test_rewrite_and_report_survive_names_that_are_not_utf8(tmp_path: Path, cli: Callable[..., Any]) -> None:
    project = _surrogate_name(tmp_path, b"pr\xffoj")
    (project / "ok.py").write_text(CUDA_PY, encoding="utf-8")
    _surrogate_name(project, b"bad\xffname.py")
    report = cli("report", str(project), "-q", "--output-json", "-", cwd=tmp_path)  # with the scan cache: its file name hashes the root
    assert report.exit_code == 0, report
    assert json.loads(report.stdout)["headline"]["sites"] == 2
    run = cli("rewrite", "--apply", "--no-cache", ".", cwd=project)
    assert run.exit_code == 1, run  # the oddly named file is left for a person; the other is fixed
    assert "Traceback" not in run.stderr
    assert (project / "ok.py").read_text(encoding="utf-8") == CUDA_PY.replace(".cuda()", '.to("neuron")')


def test_a_failed_run_never_touches_sources(tmp_path: Path, cli: Callable[..., Any]) -> None:
    source = tmp_path / "a.py"
    source.write_text(CUDA_PY, encoding="utf-8")
    (tmp_path / "pyproject.toml").write_text("[tool.neuron-migrate]\nfail-on = 3\n", encoding="utf-8")
    run = cli("rewrite", "--apply", "a.py", cwd=tmp_path)
    assert run.exit_code == 2 and "fail-on" in run.stderr, run
    assert source.read_text(encoding="utf-8") == CUDA_PY


# --- damaged migration records: `diff` reads only what `validate` has checked ------------------------


def _runtime_finding(code: str, symbol: str, details: dict[str, Any]) -> dict[str, Any]:
    return {"code": code, "severity": "warning", "fix_class": "manual", "category": "runtime", "path": "a.py",
            "cell": None, "span": {"line": 3, "col": 0, "end_line": 3, "end_col": 5}, "message": "m",
            "source_line": "x", "symbol": symbol, "details": details}


@pytest.fixture(scope="module")
def record(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A real record of a one-file project, with a check section holding a fallback and a recompile."""
    from typer.testing import CliRunner

    from neuron_migrate.cli import app

    root = tmp_path_factory.mktemp("rec")
    (root / "a.py").write_text(CUDA_PY, encoding="utf-8")
    result = CliRunner().invoke(app, ["report", str(root), "-q", "--no-cache", "--output-json", "-"], catch_exceptions=False)
    rec = json.loads(result.stdout)
    rec["check"] = {"report": {**rec["scan"], "command": "check", "findings": [
        _runtime_finding("NM901", "aten::argmax", {"count": 3}),
        _runtime_finding("NM903", "y = f(x)", {"distinct_signatures": 2, "ops": [{"op": "aten::mm", "varied": {"d": [1, 2]}}]}),
    ]}}
    rec["headline"]["check_completed"] = True
    return validate(rec, "rec")


def _leaves(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [path] if path else []
    if isinstance(value, dict):
        for k, v in value.items():
            out += _leaves(v, (*path, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out += _leaves(v, (*path, i))
    return out


def test_every_damaged_record_is_a_record_error_or_compares(record: dict[str, Any]) -> None:
    """Each value of a record, replaced by each wrong kind of JSON value, on either side of a diff."""
    damaged = 0
    for path in _leaves(record):
        for bad in (None, 5, "x", [], {}, [5], {"a": 1}, True):
            broken = copy.deepcopy(record)
            holder = broken
            for key in path[:-1]:
                holder = holder[key]
            holder[path[-1]] = bad
            for old, new in ((broken, record), (record, broken)):
                try:
                    result = compare(validate(old, "old"), validate(new, "new"))
                except RecordError as exc:
                    assert str(exc).startswith(("old: ", "new: "))
                    damaged += 1
                    continue
                render_text(result)
                render_markdown(result)
    assert damaged > 100  # the loop did reach the checks


@pytest.mark.parametrize(
    ("mutate", "words"),
    [
        (lambda r: r.pop("headline"), "missing 'headline'"),
        (lambda r: r.__setitem__("headline", []), "'headline' must be an object"),
        (lambda r: r.__setitem__("versions", 3), "'versions' must be an object"),
        (lambda r: r.__setitem__("check", [1]), "'check' must be an object or null"),
        (lambda r: r["versions"].pop("rule_pack"), "missing key 'rule_pack'"),
        (lambda r: r["scan"]["findings"][0].__setitem__("cell", "x"), "malformed record"),
    ],
    ids=["no-headline", "headline-list", "versions-int", "check-list", "no-rule-pack", "cell-str"],
)
def test_diff_of_a_damaged_record_names_the_file(
    mutate: Callable[[dict[str, Any]], Any], words: str, record: dict[str, Any], tmp_path: Path,
    cli: Callable[..., Any],
) -> None:
    broken = copy.deepcopy(record)
    mutate(broken)
    (tmp_path / "good.json").write_text(json.dumps(record), encoding="utf-8")
    (tmp_path / "bad.json").write_text(json.dumps(broken), encoding="utf-8")
    for argv in (["diff", "bad.json", "good.json"], ["diff", "good.json", "bad.json"]):
        run = cli(*argv, cwd=tmp_path)
        assert run.exit_code == 2, run
        assert run.stderr.startswith("neuron-migrate: error: bad.json: ") and words in run.stderr, run
