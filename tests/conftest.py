"""Shared pytest options and fixtures. `--update-golden` rewrites golden files instead of comparing."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from neuron_migrate.findings import Finding, FixClass, Severity, Span, Target
from neuron_migrate.ruleset.model import FixKind, FixSpec, Match, Rule, RulePack, TargetFix


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--update-golden",
        action="store_true",
        default=False,
        help="rewrite golden files (tests/**/golden/) from the current output instead of comparing",
    )


@pytest.fixture
def update_golden(request: pytest.FixtureRequest) -> bool:
    return bool(request.config.getoption("--update-golden"))


def _rule(code: str, name: str, category: str, severity: Severity, fix_class: FixClass,
          title: str, *, safety: str = "", refs: tuple[str, ...] = (),
          message: str = "`{symbol}` is CUDA-specific") -> Rule:
    targets = (
        {Target.NEURON: TargetFix(FixKind.FIXER, "x"), Target.ACCELERATOR: TargetFix(FixKind.FIXER, "x")}
        if fix_class in (FixClass.SAFE, FixClass.UNSAFE)
        else {}
    )
    return Rule(
        code=code, name=name, title=title, category=category, severity=severity,
        match=Match(), fix=FixSpec(fix_class, targets, safety), message=message,
        why=f"Why {code} matters on Trainium.\n\nSecond paragraph with `code`.", references=refs,
        invalid=(), valid=(),
    )


@pytest.fixture(scope="session")
def mini_pack() -> RulePack:
    """A small hand-made pack with one rule per finding kind, independent of the shipped rules."""
    rules = [
        _rule("NM001", "syntax-error", "tool", Severity.ERROR, FixClass.NONE, "The file does not parse"),
        _rule("NM006", "unused-suppression", "tool", Severity.WARNING, FixClass.MANUAL,
              "A suppression comment suppresses nothing",
              message="`# neuron-migrate: {symbol}` suppresses nothing"),
        _rule("NM101", "cuda-device-string", "device", Severity.ERROR, FixClass.SAFE,
              "A 'cuda' device string", refs=("https://awsdocs-neuron.readthedocs-hosted.com/en/latest/",)),
        _rule("NM201", "cuda-synchronize", "cuda-api", Severity.WARNING, FixClass.SAFE,
              "torch.cuda.synchronize has a Neuron equivalent"),
        _rule("NM301", "cuda-amp-autocast", "amp", Severity.WARNING, FixClass.UNSAFE,
              "torch.cuda.amp.autocast", safety="The default dtype becomes bfloat16."),
        _rule("NM701", "flash-attn", "kernels-libraries", Severity.ERROR, FixClass.MANUAL,
              "flash_attn is CUDA-only"),
        _rule("NM702", "cuda-extension", "kernels-libraries", Severity.INFO, FixClass.NONE,
              "A CUDA source file"),
        _rule("NM901", "cpu-fallback", "runtime", Severity.ERROR, FixClass.MANUAL,
              "An op fell back to the CPU"),
    ]
    return RulePack(name="test", version="9.9.9", neuron_sdk="2.33", torch_neuronx="2.13/2.14",
                    provenance="tests", rules={r.code: r for r in rules}, redirects={"NM199": "NM101"})


@pytest.fixture(scope="session")
def make_finding(mini_pack: RulePack) -> Callable[..., Finding]:
    """Build a finding of a `mini_pack` rule: make_finding("NM201", "a.py", 3, source_line=...)."""

    def make(code: str, path: str, line: int, col: int = 0, *, source_line: str = "x",
             symbol: str = "", **kw: Any) -> Finding:
        rule = mini_pack.rules[code]
        return Finding(code=code, severity=rule.severity, fix_class=rule.fix.fix_class,
                       category=rule.category, path=path, span=Span(line, col, line, col + 1),
                       message=rule.render_message(symbol), source_line=source_line,
                       symbol=symbol, **kw)

    return make


@pytest.fixture(scope="session")
def source_tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the repository as a fresh clone has it (tracked files, and untracked files git does
    not ignore), for tests that install or clone the project without touching the checkout."""
    import shutil
    import subprocess

    repo = Path(__file__).resolve().parents[1]
    dest = tmp_path_factory.mktemp("source") / "neuron-migrate"
    listed = subprocess.run(["git", "-C", str(repo), "ls-files", "-co", "--exclude-standard", "-z"],
                            check=True, capture_output=True, text=True).stdout
    for rel in filter(None, listed.split("\0")):
        if (repo / rel).is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(repo / rel, dest / rel)
    return dest


@pytest.fixture(scope="session")
def source_repo(source_tree: Path) -> tuple[Path, str]:
    """`source_tree` committed as a git repository (a stand-in for the project's URL) and its head."""
    import os
    import subprocess

    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.org",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.org"}
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "snapshot"]):
        subprocess.run(["git", *args], cwd=source_tree, env=env, check=True, capture_output=True)
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=source_tree, check=True, capture_output=True, text=True)
    return source_tree, head.stdout.strip()
