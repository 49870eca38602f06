"""`neuron-migrate rules` and `neuron-migrate explain`."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from neuron_migrate.cli import app
from neuron_migrate.findings import Target
from neuron_migrate.ruleset.load import load_pack

runner = CliRunner()
PACK = load_pack()


def test_rules_lists_every_rule_as_plain_columns_when_piped():
    result = runner.invoke(app, ["rules"])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0].split() == ["Code", "Name", "Severity", "Fix", "Title"]
    assert [line.split()[0] for line in lines[1:]] == list(PACK.rules)
    nm206 = next(line for line in lines if line.startswith("NM206"))
    assert nm206.split()[1:4] == ["cuda-synchronize", "warning", "safe"]
    assert nm206.endswith(PACK.rules["NM206"].title)
    assert "│" not in result.stdout and "\x1b[" not in result.stdout


def test_rules_filters_by_prefix():
    result = runner.invoke(app, ["rules", "NM20", "NM101"])
    assert result.exit_code == 0
    codes = [line.split()[0] for line in result.stdout.splitlines()[1:]]
    assert codes == ["NM101"] + [c for c in PACK.rules if c.startswith("NM20")]


def test_rules_json():
    result = runner.invoke(app, ["rules", "--format", "json", "NM3"])
    assert result.exit_code == 0
    doc = json.loads(result.stdout)
    assert doc["pack"]["neuron_sdk"] == "2.33" and doc["pack"]["digest"] == PACK.digest
    assert [r["code"] for r in doc["rules"]] == [c for c in PACK.rules if c.startswith("NM3")]
    nm301 = doc["rules"][0]
    assert nm301["fix_class"] == "unsafe" and set(nm301["targets"]) == {"neuron", "accelerator"}


def test_rules_unknown_prefix_and_bad_format_exit_2():
    result = runner.invoke(app, ["rules", "NM8x"])
    assert result.exit_code == 2 and "invalid rule selector 'NM8x'" in result.stderr
    result = runner.invoke(app, ["rules", "--format", "yaml"])
    assert result.exit_code == 2


def test_explain_prints_the_rule_with_examples():
    result = runner.invoke(app, ["explain", "nm206"])
    assert result.exit_code == 0
    out = result.stdout
    assert out.startswith("# NM206 cuda-synchronize")
    assert "rename to `torch.neuron.synchronize`" in out
    assert "rename to `torch.accelerator.synchronize`" in out
    assert "torch.cuda.synchronize()" in out and "torch.neuron.synchronize()" in out
    assert "## Not flagged" in out


def test_explain_unsafe_rule_says_why():
    result = runner.invoke(app, ["explain", "NM503"])
    assert result.exit_code == 0
    assert "Why unsafe:" in result.stdout and "remove the argument" in result.stdout


def test_explain_json():
    result = runner.invoke(app, ["explain", "NM101", "--format", "json"])
    assert result.exit_code == 0
    doc = json.loads(result.stdout)
    assert doc["code"] == "NM101" and doc["severity"] == "error"
    assert doc["examples"]["invalid"][0]["neuron"] == PACK.rules["NM101"].invalid[0].expected[Target.NEURON]


def test_explain_unknown_code_exits_2():
    result = runner.invoke(app, ["explain", "NM999"])
    assert result.exit_code == 2
    assert "unknown rule code 'NM999'" in result.stderr
    assert result.stdout == ""
