"""End to end (real scan + rewrite): fixture pairs `<case>.in.py` -> `<case>.<target>.out.py`,
TorchFix style (a new case is new files), plus idempotence on every fixture and sample project.

Cases run with `--unsafe-fixes`, except those named `safe_*`.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from neuron_migrate.api import rewrite_paths
from neuron_migrate.config import Settings
from neuron_migrate.findings import Target
from neuron_migrate.rewrite.engine import FileStatus, RewriteResult

FIXTURES = Path(__file__).parent / "fixtures"
SAMPLES = Path(__file__).parents[2] / "sample_projects"
CASES = [
    pytest.param(path, target, id=f"{path.name[: -len('.in.py')]}-{target.value}")
    for path in sorted(FIXTURES.glob("*.in.py"))
    for target in Target
    if (FIXTURES / f"{path.name[: -len('.in.py')]}.{target.value}.out.py").exists()
]


def _rewrite(root: Path, target: Target, unsafe: bool) -> RewriteResult:
    settings = Settings(target=target, unsafe_fixes=unsafe, respect_gitignore=False)
    return rewrite_paths(
        [root], settings, apply=True, unsafe=unsafe, allow_dirty=True, target=target, use_cache=False
    )


def _snapshot(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_every_fixture_has_an_expected_output() -> None:
    for path in FIXTURES.glob("*.in.py"):
        name = path.name[: -len(".in.py")]
        assert any((FIXTURES / f"{name}.{t.value}.out.py").exists() for t in Target), name


@pytest.mark.parametrize(("case", "target"), CASES)
def test_fixture(case: Path, target: Target, tmp_path: Path) -> None:
    name = case.name[: -len(".in.py")]
    work = tmp_path / f"{name}.py"
    shutil.copyfile(case, work)
    unsafe = not name.startswith("safe_")
    first = _rewrite(tmp_path, target, unsafe)
    expected = (FIXTURES / f"{name}.{target.value}.out.py").read_text()
    assert work.read_text() == expected
    assert all(o.status in (FileStatus.CHANGED, FileStatus.UNCHANGED) for o in first.files), first.files

    before = work.read_bytes()
    second = _rewrite(tmp_path, target, unsafe)
    assert [o for o in second.files if o.status is FileStatus.CHANGED] == []
    assert work.read_bytes() == before


@pytest.mark.slow
@pytest.mark.parametrize("target", list(Target))
# Hidden directories (a scan's `.neuron-migrate-cache` left in a checkout) are no sample project.
@pytest.mark.parametrize("sample", sorted(p.name for p in SAMPLES.iterdir() if p.is_dir() and not p.name.startswith("."))
                         if SAMPLES.is_dir() else [])
def test_sample_project_rewrite_is_idempotent(sample: str, target: Target, tmp_path: Path) -> None:
    root = tmp_path / sample
    shutil.copytree(SAMPLES / sample, root)
    first = _rewrite(root, target, unsafe=True)
    assert [o for o in first.files if o.status is FileStatus.SKIPPED] == []
    after_first = _snapshot(root)
    second = _rewrite(root, target, unsafe=True)
    assert [o.path for o in second.files if o.status is FileStatus.CHANGED] == []
    assert _snapshot(root) == after_first
