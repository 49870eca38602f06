"""Meta-tests over the shipped rule pack: identity, fix declarations, examples, docs freshness."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from neuron_migrate.findings import FixClass
from neuron_migrate.ruleset.docs import CHECK_DOCS_PATH, DOCS_PATH, render_check_doc, render_pack, render_runtime
from neuron_migrate.ruleset.load import known_fixers, load_pack
from neuron_migrate.ruleset.location import rules_dir
from neuron_migrate.ruleset.model import FAMILIES, FixKind

PACK = load_pack()
RULES = list(PACK.rules.values())
MESSAGE_ONLY = ("NM0", "NM9")
SOURCE_RULES = [r for r in RULES if not r.code.startswith(MESSAGE_ONLY)]
FIXABLE = [r for r in RULES if r.fix.fix_class in (FixClass.SAFE, FixClass.UNSAFE)]


def _ids(rules):
    return [r.code for r in rules]


def test_codes_are_unique_across_the_raw_files():
    seen: dict[str, str] = {}
    for path in sorted(rules_dir().glob("nm*.yaml")):
        for entry in yaml.safe_load(path.read_text(encoding="utf-8"))["rules"]:
            assert entry["code"] not in seen, f"{entry['code']} in {path.name} and {seen[entry['code']]}"
            seen[entry["code"]] = path.name
    assert set(seen) == set(PACK.rules)


@pytest.mark.parametrize("rule", RULES, ids=_ids(RULES))
def test_code_family_file_and_category_agree(rule):
    family = rule.code[:3]
    assert re.fullmatch(r"NM\d{3}", rule.code)
    assert Path(rule.source_file).name.startswith(f"nm{family[2]}-")
    assert rule.category == FAMILIES[family].category


def test_names_are_unique_kebab_case():
    names = [r.name for r in RULES]
    assert len(names) == len(set(names))
    assert all(re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", n) for n in names)


def test_every_family_has_rules_and_nm0_is_exactly_the_tool_diagnostics():
    assert {r.code[:3] for r in RULES} == set(FAMILIES)
    assert [r.code for r in RULES if r.code.startswith("NM0")] == [f"NM00{i}" for i in range(1, 9)]


def test_project_modules_name_live_rules_that_match_in_a_file():
    """A kernel module is one where these rules report: each must exist and match by itself."""
    for rule in RULES:
        for code in rule.match.project_modules:
            assert code in PACK.rules and not PACK.rules[code].match.project_modules, (rule.code, code)


def test_redirects_point_to_live_codes():
    for old, new in PACK.redirects.items():
        assert old not in PACK.rules and new in PACK.rules


@pytest.mark.parametrize("rule", FIXABLE, ids=_ids(FIXABLE))
def test_fixable_rule_has_an_expected_rewrite_for_every_target(rule):
    assert rule.fix.targets
    for target in rule.fix.targets:
        assert any(target in e.expected for e in rule.invalid), f"{rule.code}: no example for {target}"
    for example in rule.invalid:
        assert set(example.expected) <= set(rule.fix.targets)
        for target, out in example.expected.items():
            assert out != example.code, f"{rule.code}: the {target} rewrite changes nothing"


@pytest.mark.parametrize("rule", RULES, ids=_ids(RULES))
def test_fix_declarations_are_consistent(rule):
    if rule.fix.fix_class in (FixClass.MANUAL, FixClass.NONE):
        assert not rule.fix.targets
        assert all(not e.expected for e in rule.invalid)
    if rule.fix.fix_class is FixClass.UNSAFE:
        assert len(rule.fix.safety.strip()) > 20
    else:
        assert rule.fix.safety == ""


def test_named_fixers_exist_in_the_registry():
    named = {f.value for r in RULES for f in r.fix.targets.values() if f.kind is FixKind.FIXER}
    assert named == {"accelerator_device_string", "cuda_method", "is_cuda_attribute", "amp_autocast", "amp_autocast_device",
                     "amp_grad_scaler", "compile_backend", "accelerator_manual_seed"}
    known = known_fixers()
    assert named <= known, f"rules name fixers the registry lacks: {sorted(named - known)}"


@pytest.mark.parametrize("rule", SOURCE_RULES, ids=_ids(SOURCE_RULES))
def test_source_rule_has_valid_and_invalid_examples_that_parse(rule):
    assert rule.invalid and rule.valid
    if rule.match.requirements or rule.match.config_values:  # examples are a requirements or YAML file
        return
    files_only = bool(rule.match.files) and not any(
        (rule.match.qualified_names, rule.match.device_strings, rule.match.methods, rule.match.attributes,
         rule.match.arguments, rule.match.imports, rule.match.env_vars))
    for example in rule.invalid:
        if not files_only:
            ast.parse(example.code)
        for out in example.expected.values():
            ast.parse(out)
    for code in rule.valid:
        ast.parse(code)


@pytest.mark.parametrize("rule", [r for r in RULES if r.code.startswith(MESSAGE_ONLY)],
                         ids=_ids([r for r in RULES if r.code.startswith(MESSAGE_ONLY)]))
def test_tool_and_runtime_rules_are_messages_only(rule):
    assert rule.match.is_empty()
    assert not rule.invalid and not rule.valid
    assert "{symbol}" in rule.message


@pytest.mark.parametrize("rule", RULES, ids=_ids(RULES))
def test_rule_documents_itself(rule):
    assert rule.title and rule.message and len(rule.why) > 40
    assert rule.references and all(u.startswith("https://") for u in rule.references)


def test_pack_metadata_names_the_neuron_release():
    assert PACK.neuron_sdk == "2.33"
    assert PACK.torch_neuronx == "2.13/2.14"
    assert PACK.torch and PACK.provenance
    assert re.fullmatch(r"[0-9a-f]{64}", PACK.digest)


def test_docs_rules_md_is_up_to_date():
    assert DOCS_PATH.read_text(encoding="utf-8") == render_pack(PACK), (
        "docs/rules.md is stale: run `python -m neuron_migrate.ruleset.docs`"
    )


def test_docs_say_each_condition_that_makes_a_call_harmless():
    """An `unless` argument with values names them; one that only has to be given says so."""
    rendered = render_pack(PACK)
    assert "not when argument `enabled=` / position 2 is `False`" in rendered
    assert "not when argument `gpus=` is given" in rendered
    assert not re.search(r"not when argument `[^`]*`(?: / position \d+)? is (?:;|$)", rendered, re.M)


def test_docs_check_md_says_what_each_runtime_finding_means():
    text = CHECK_DOCS_PATH.read_text(encoding="utf-8")
    assert text == render_check_doc(PACK, text), (
        "docs/check.md's runtime findings are stale: run `python -m neuron_migrate.ruleset.docs`")
    section = render_runtime(PACK)
    for rule in PACK.rules.values():
        if rule.code.startswith("NM9"):
            assert f"[**{rule.code}**]" in section and rule.title in section


def test_docs_check_mode_reports_freshness():
    done = subprocess.run([sys.executable, "-m", "neuron_migrate.ruleset.docs", "--check"],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_loading_imports_neither_torch_nor_libcst_and_is_cached():
    # Speed is the benchmarks' business (no timed assertions in tests): here, what loading imports.
    code = (
        "import sys\n"
        "from neuron_migrate.ruleset.load import load_pack\n"
        "a = load_pack()\n"
        "assert load_pack() is a\n"
        "assert 'torch' not in sys.modules and 'libcst' not in sys.modules, 'heavy import'\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
