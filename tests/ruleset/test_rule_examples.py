"""The one generic test (Fixit style): every rule's own examples prove the rule.

For every rule x example (x target):
  * a valid example parses and gives no finding of that rule;
  * an invalid example gives exactly `count` findings of the rule, each with the rule's fix class,
    and, for every target the example shows, a fix of that class;
  * applying every fix for a target (safe and unsafe, of all findings in the example: examples are
    realistic code, so other rules' fixes apply too) gives exactly the expected text, which
    parses; analysing and fixing that output again changes nothing (convergence).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

from neuron_migrate.findings import Finding, FixClass, Target
from neuron_migrate.rewrite.apply import apply_fixes_to_source
from neuron_migrate.ruleset.load import load_pack
from neuron_migrate.ruleset.model import Example, Rule
from neuron_migrate.scan.analyze import analyze_file_path, analyze_source
from neuron_migrate.scan.engine import scan_paths

PACK = load_pack()
MATCHED = [r for r in PACK.rules.values() if not r.match.is_empty()]
_FILE = "example.py"


def _valid_cases() -> Iterator[object]:
    for rule in MATCHED:
        for i, code in enumerate(rule.valid):
            yield pytest.param(rule, code, id=f"{rule.code}-valid-{i}")


def _invalid_cases() -> Iterator[object]:
    for rule in MATCHED:
        for i, ex in enumerate(rule.invalid):
            yield pytest.param(rule, ex, id=f"{rule.code}-invalid-{i}")


def _fix_cases() -> Iterator[object]:
    for rule in MATCHED:
        for i, ex in enumerate(rule.invalid):
            for target in ex.expected:
                yield pytest.param(rule, ex, target, id=f"{rule.code}-invalid-{i}-{target.value}")


def _findings(code: str) -> list[Finding]:
    return analyze_source(code, _FILE, PACK)


def _example_path(rule: Rule) -> str:
    """A path the rule's first `files` glob matches (`*.cu` -> `csrc/example.cu`)."""
    return "csrc/" + rule.match.files[0].replace("*", "example").replace("?", "x")


# What a `project_modules` rule's example imports: a module of the same package defining a Triton kernel.
_KERNELS = ("import triton\nimport triton.language as tl\n\n\n@triton.jit\ndef _add(x_ptr, y_ptr, n: tl.constexpr):\n"
            "    pass\n\n\ndef fused_add(x, y):\n    return x + y\n")
# What an `extensions` rule's example imports: the compiled modules the project's build declares.
_SETUP = ("from setuptools import setup\nfrom torch.utils.cpp_extension import BuildExtension, CUDAExtension\n\n"
          "setup(name='pkg', ext_modules=[\n"
          "    CUDAExtension(name='fused_dense_lib', sources=['csrc/fused_dense.cpp', 'csrc/fused_dense_cuda.cu']),\n"
          "    CUDAExtension('pkg._ext', ['csrc/ext.cpp', 'csrc/ext_kernel.cu']),\n"
          "], cmdclass={'build_ext': BuildExtension})\n")


def _by_project(rule: Rule) -> bool:
    """Whether the rule's findings depend on the project around the file."""
    return bool(rule.match.project_modules or rule.match.extensions)


def _project_findings(rule: Rule, code: str, root: Path) -> list[Finding]:
    """`code` as `pkg/user.py` beside `pkg/kernels.py`, in a project whose setup.py declares CUDA
    extensions, scanned as a project: the rule's findings there."""
    (root / "pkg").mkdir()
    (root / "setup.py").write_text(_SETUP)
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "kernels.py").write_text(_KERNELS)
    (root / "pkg" / "user.py").write_text(code)
    result = scan_paths([root], PACK, use_cache=False, jobs=1)
    return [f for fr in result.files if fr.path == "pkg/user.py" for f in fr.findings if f.code == rule.code]


def _data_file(rule: Rule) -> str | None:
    """Where a rule's examples are written when they are not Python: a requirements file, a
    YAML configuration file."""
    return "requirements.txt" if rule.match.requirements else "configs/train.yaml" if rule.match.config_values else None


def _data_findings(rule: Rule, text: str, root: Path) -> list[Finding]:
    """`text` as the project's requirements file or configuration file, scanned: the rule's findings there."""
    path = root / str(_data_file(rule))
    path.parent.mkdir(exist_ok=True)
    path.write_text(text)
    result = scan_paths([root], PACK, use_cache=False, jobs=1)
    return [f for fr in result.files for f in fr.findings if f.code == rule.code]


def _apply(code: str, target: Target) -> str:
    result = apply_fixes_to_source(code, _findings(code), target, unsafe=True)
    assert not result.error, result.error
    assert not result.skipped, [f"{s.finding.code}: {s.reason}" for s in result.skipped]
    return result.new_source


@pytest.mark.parametrize(("rule", "code"), list(_valid_cases()))
def test_valid_example_is_not_flagged(rule: Rule, code: str, tmp_path: Path) -> None:
    if _data_file(rule):  # the text of a requirements or configuration file
        assert _data_findings(rule, code, tmp_path) == []
        return
    ast.parse(code)
    if _by_project(rule):  # decided by the project around the file
        assert _project_findings(rule, code, tmp_path) == []
        return
    found = [f for f in [*_findings(code), *analyze_file_path(_FILE, PACK)] if f.code == rule.code]
    assert found == [], [f"{f.location()} {f.symbol}" for f in found]


@pytest.mark.parametrize(("rule", "example"), list(_invalid_cases()))
def test_invalid_example_is_flagged(rule: Rule, example: Example, tmp_path: Path) -> None:
    if rule.match.files:  # the file itself is the finding; its text is not Python
        found = [f for f in analyze_file_path(_example_path(rule), PACK) if f.code == rule.code]
        assert len(found) == example.count and all(f.span.line == 1 for f in found)
        return
    if _data_file(rule):
        found = _data_findings(rule, example.code, tmp_path)
        assert len(found) == example.count, [f"{f.location()} {f.symbol}" for f in found]
        assert all(f.path == _data_file(rule) and not f.fixes for f in found)
        return
    if _by_project(rule):
        found = _project_findings(rule, example.code, tmp_path)
        assert len(found) == example.count, [f"{f.location()} {f.symbol}" for f in found]
        assert all(f.message == rule.render_message(f.symbol) and not f.fixes for f in found)
        assert all(example.code.splitlines()[f.span.line - 1] == f.source_line for f in found)
        return
    found = [f for f in _findings(example.code) if f.code == rule.code]
    assert len(found) == example.count, [f"{f.location()} {f.symbol}" for f in found]
    # A safe rule's fix is unsafe at a site where it relies on a fact it cannot see (a `.cuda()`
    # receiver that may not be a tensor, a name bound twice: scan.fixes.bindings).
    allowed = {rule.fix.fix_class, FixClass.UNSAFE} if rule.fix.fix_class is FixClass.SAFE else {rule.fix.fix_class}
    if not example.expected:  # a value assigned here and passed on elsewhere (`named`): fixed there
        allowed.add(FixClass.MANUAL)
    for finding in found:
        assert finding.fix_class in allowed
        assert finding.message == rule.render_message(finding.symbol)
        assert example.code.splitlines()[finding.span.line - 1] == finding.source_line
        for target in example.expected:
            fix = finding.fix_for(target)
            assert fix is not None and fix.edits, f"no {target.value} fix for {finding.location()}"
            assert fix.applicability is finding.fix_class
    if rule.fix.fix_class not in (FixClass.SAFE, FixClass.UNSAFE):
        assert all(not f.fixes for f in found)


@pytest.mark.parametrize(("rule", "example", "target"), list(_fix_cases()))
def test_fix_gives_expected_output_and_converges(rule: Rule, example: Example, target: Target) -> None:
    fixed = _apply(example.code, target)
    assert fixed == example.expected[target]
    ast.parse(fixed)
    assert _apply(fixed, target) == fixed
