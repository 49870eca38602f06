"""Malformed rule files stop the tool with RulePackError naming file, rule and field (exit 2 at the CLI)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from typer.testing import CliRunner

from neuron_migrate.cli import app
from neuron_migrate.errors import RulePackError
from neuron_migrate.ruleset.load import load_pack, parse_rule_file

GOOD_RULE = """\
rules:
  - code: NM777
    name: team-cuda-helper
    title: Our own CUDA helper
    category: kernels-libraries
    severity: warning
    match:
      qualified_names: [ourlib.cuda_helper]
    fix:
      class: manual
    message: "`{symbol}` needs CUDA"
    why: Our helper only exists on GPU hosts.
    references: [https://example.com/docs]
    examples:
      invalid:
        - code: |
            import ourlib
            ourlib.cuda_helper()
      valid:
        - |
          import ourlib
          ourlib.cpu_helper()
"""


def _write(tmp_path: Path, text: str, name: str = "team-rules.yaml") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def _error(tmp_path: Path, text: str) -> RulePackError:
    path = _write(tmp_path, text)
    with pytest.raises(RulePackError) as info:
        load_pack([path])
    assert info.value.file == str(path)
    return info.value


def test_a_good_extra_file_loads_on_top_of_the_pack(tmp_path):
    base = load_pack()
    pack = load_pack([_write(tmp_path, GOOD_RULE)])
    assert "NM777" in pack.rules and "NM777" not in base.rules
    assert set(base.rules) < set(pack.rules)
    assert pack.digest != base.digest
    assert pack.rules["NM777"].source_file.endswith("team-rules.yaml")


def test_yaml_syntax_error_names_the_file_and_line(tmp_path):
    err = _error(tmp_path, "rules:\n  - code: NM777\n    name: [unclosed\n")
    assert err.code is None
    assert "invalid YAML" in err.problem and "line" in err.problem


@pytest.mark.parametrize(
    ("old", "new", "field", "words"),
    [
        ("    severity: warning\n", "    severity: warning\n    colour: red\n", "colour", "unknown key"),
        ("    title: Our own CUDA helper\n", "", "title", "missing required field"),
        ("severity: warning", "severity: fatal", "severity", "invalid value 'fatal'"),
        ("category: kernels-libraries", "category: device", "category", "does not match family"),
        ("name: team-cuda-helper", "name: Team_Helper", "name", "kebab-case"),
        ("      class: manual\n", "      class: unsafe\n      neuron: {rename: ourlib.helper}\n", "fix.safety",
         "required for unsafe"),
        ("      class: manual\n", "      class: manual\n      neuron: {rename: ourlib.helper}\n", "fix.neuron",
         "has no replacement"),
        ("      class: manual\n", "      class: safe\n      neuron: {fixer: NotSnake}\n", "fix.neuron.fixer",
         "snake_case"),
        ("      class: manual\n", "      class: manual\n      queries: [is_contiguous]\n", "fix.queries",
         "no fix to withhold"),
        ("      class: manual\n", "      class: safe\n      neuron: {rename: a}\n      queries: is_contiguous\n",
         "fix.queries", "expected a list"),
        ("      class: manual\n", "      class: safe\n      neuron: {rename: a, replace: b}\n", "fix.neuron",
         "exactly one"),
        ("      class: manual\n", "      class: manual\n      value_stays: yes please\n", "fix.value_stays",
         "expected true or false"),
        ("      qualified_names: [ourlib.cuda_helper]\n", "      names: [ourlib.cuda_helper]\n", "match.names",
         "unknown key"),
        ("      qualified_names: [ourlib.cuda_helper]\n", "      arguments: [{call: [f], missing: true}]\n",
         "match.arguments[0]", "keyword"),
        ("      qualified_names: [ourlib.cuda_helper]\n",
         "      arguments: [{call: [f], keyword: backend, named: [backend]}]\n", "match.arguments[0].named",
         "needs `values`"),
        ("      qualified_names: [ourlib.cuda_helper]\n", "      project_modules: [NM705]\n", "project",
         "go together"),
        ("    match:\n      qualified_names: [ourlib.cuda_helper]\n",
         "    project: kernel-module\n    match:\n      project_modules: [triton]\n", "match.project_modules", "rule codes"),
        ("      qualified_names: [ourlib.cuda_helper]\n", "      extensions: [cpp_extension.CUDAExtension]\n",
         "match.extensions", "build-script calls"),
        ("      qualified_names: [ourlib.cuda_helper]\n",
         "      arguments: [{call: [f], keyword: load_in_8bit, switch: true}]\n", "match.arguments[0].switch",
         "needs `values`"),
        ("      qualified_names: [ourlib.cuda_helper]\n",
         "      arguments: [{call: [f], position: 0, inside: options}]\n", "match.arguments[0].inside", "keyword"),
        ("      qualified_names: [ourlib.cuda_helper]\n",
         "      arguments: [{call: [f], keyword: sources, suffixes: [.cu], values: [a.cu]}]\n",
         "match.arguments[0].suffixes", "no `values`"),
        ("      qualified_names: [ourlib.cuda_helper]\n",
         "      arguments: [{call: [f], keyword: device_type, missing: true, unless: [{keyword: devices}]}]\n",
         "match.arguments[0].unless[0]", "either `values`"),
        ("      qualified_names: [ourlib.cuda_helper]\n",
         "      arguments: [{call: [f], keyword: device_type, missing: true, unless: [{keyword: devices, values: [1], present: true}]}]\n",
         "match.arguments[0].unless[0]", "either `values`"),
        ("      qualified_names: [ourlib.cuda_helper]\n",
         "      arguments: [{call: [f], keyword: device_type, missing: true, unless: [{keyword: devices, present: yes please}]}]\n",
         "match.arguments[0].unless[0].present", "true or false"),
        ("      qualified_names: [ourlib.cuda_helper]\n",
         "      arguments: [{call: [f], keyword: device_type, missing: true, unless: [{values: [[]]}]}]\n",
         "match.arguments[0].unless[0]", "keyword"),
        ("      qualified_names: [ourlib.cuda_helper]\n",
         "      arguments: [{call: [f], keyword: device_type, missing: true, unless: [{keyword: d, values: [[1]]}]}]\n",
         "match.arguments[0].unless[0].values[0]", "literals"),
        ("      qualified_names: [ourlib.cuda_helper]\n", "      qualified_names: [ourlib.cuda_helper]\n      checks: 1\n",
         "match.checks", "true or false"),
        ("      qualified_names: [ourlib.cuda_helper]\n", "      requirements: [Flash_Attn]\n",
         "match.requirements", "normalised names"),
        ("    references: [https://example.com/docs]\n", "    references: [see the wiki]\n", "references[0]",
         "not a URL"),
        ("    severity: warning\n", "    severity: warning\n    ends_run: true\n", "ends_run", "only NM9xx"),
        ("    severity: warning\n", "    severity: warning\n    hotspot: true\n", "hotspot", "only NM9xx"),
        ("      valid:\n        - |\n          import ourlib\n          ourlib.cpu_helper()\n", "", "examples",
         "at least one"),
    ],
)
def test_bad_field_names_file_rule_and_field(tmp_path, old, new, field, words):
    assert old in GOOD_RULE
    err = _error(tmp_path, GOOD_RULE.replace(old, new))
    assert err.code == "NM777"
    assert err.field == field
    assert words in err.problem
    assert str(err).startswith(f"{err.file}: rule NM777: field '{field}'")


def test_bad_code_format(tmp_path):
    err = _error(tmp_path, GOOD_RULE.replace("code: NM777", "code: NM77"))
    assert err.field == "code" and "three digits" in err.problem


def test_duplicate_code_with_the_shipped_pack(tmp_path):
    err = _error(tmp_path, GOOD_RULE.replace("NM777", "NM201").replace("team-cuda-helper", "other-name")
                 .replace("kernels-libraries", "cuda-api"))
    assert err.code == "NM201" and err.field == "code"
    assert "duplicate code" in err.problem and "nm2-cuda-api.yaml" in err.problem


def test_duplicate_code_between_two_extra_files(tmp_path):
    first = _write(tmp_path, GOOD_RULE, "a.yaml")
    second = _write(tmp_path, GOOD_RULE.replace("team-cuda-helper", "team-cuda-helper-two"), "b.yaml")
    with pytest.raises(RulePackError) as info:
        load_pack([first, second])
    assert info.value.file == str(second) and info.value.code == "NM777"


def test_duplicate_name(tmp_path):
    err = _error(tmp_path, GOOD_RULE.replace("team-cuda-helper", "cuda-synchronize"))
    assert err.field == "name" and "duplicate name" in err.problem


def test_wrong_family_for_a_family_named_file():
    with pytest.raises(RulePackError) as info:
        parse_rule_file("rules/nm3-amp.yaml", GOOD_RULE.encode(), fixers=None, family_from_name=True)
    err = info.value
    assert (err.file, err.code, err.field) == ("rules/nm3-amp.yaml", "NM777", "code")
    assert "NM3xx" in err.problem


def test_unknown_fixer_is_rejected_when_the_registry_is_known():
    text = GOOD_RULE.replace("      class: manual\n", "      class: safe\n      neuron: {fixer: no_such_fixer}\n")
    with pytest.raises(RulePackError) as info:
        parse_rule_file("team.yaml", text.encode(), fixers=frozenset({"cuda_method"}), family_from_name=False)
    assert info.value.field == "fix.neuron.fixer" and "unknown fixer" in info.value.problem


def test_example_for_a_target_without_a_fix(tmp_path):
    text = GOOD_RULE.replace("            ourlib.cuda_helper()\n",
                             "            ourlib.cuda_helper()\n          accelerator: x\n")
    err = _error(tmp_path, text)
    assert err.field == "examples.invalid[0].accelerator"


def test_unreadable_extra_file(tmp_path):
    missing = tmp_path / "nope.yaml"
    with pytest.raises(RulePackError) as info:
        load_pack([missing])
    assert info.value.file == str(missing) and "cannot read" in info.value.problem


def test_top_level_must_be_a_rules_list(tmp_path):
    err = _error(tmp_path, "rules: {}\n")
    assert err.field == "rules"
    err = _error(tmp_path, "rule: []\n")
    assert err.field == "rule" and "unknown key" in err.problem


runner = CliRunner()


@pytest.mark.parametrize("command", [["rules"], ["explain", "NM101"]])
def test_cli_exits_2_naming_file_rule_and_field(tmp_path, command):
    bad = _write(tmp_path, GOOD_RULE.replace("severity: warning", "severity: fatal"))
    result = runner.invoke(app, [*command, "--extra-rules", str(bad)])
    assert result.exit_code == 2
    assert f"{bad}: rule NM777: field 'severity': invalid value 'fatal'" in result.stderr
    assert result.stdout == ""


def test_cli_reads_extra_rules_from_the_environment(tmp_path, monkeypatch):
    bad = _write(tmp_path, GOOD_RULE.replace("severity: warning", "severity: fatal"))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("NEURON_MIGRATE_EXTRA_RULES", str(bad))
    result = runner.invoke(app, ["rules"])
    assert result.exit_code == 2
    assert "field 'severity'" in result.stderr


def test_the_runtime_rules_say_which_end_the_run_and_which_are_hotspots():
    pack = load_pack()
    assert pack.ending_codes() == {"NM910", "NM912", "NM913"}  # mismatch error, exception, timeout
    assert pack.hotspot_codes("recompile") == {"NM903"}
    assert pack.hotspot_codes("fallback") == frozenset()


def test_runtime_flags_are_booleans():
    text = (Path(__file__).resolve().parents[2] / "rules" / "nm9-runtime.yaml").read_text(encoding="utf-8")
    assert "  ends_run: true" in text
    with pytest.raises(RulePackError) as info:
        parse_rule_file("nm9-runtime.yaml", text.replace("  ends_run: true", "  ends_run: sometimes", 1).encode(),
                        fixers=None, family_from_name=True)
    assert info.value.field == "ends_run" and "true or false" in info.value.problem
