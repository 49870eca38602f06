"""The behaviour harness on real third-party code: pinned registry artifacts of the real-code
corpus (benchmarks/corpus/packages.yaml, fetched and sha256-checked by benchmarks/corpus/fetch.py
into its cache), run tiny before and after `rewrite --apply`, both targets.

Each package's corpus files (the ones annotated by hand) and a small driver (third_party/) that
calls into them are rewritten with the safe fixes; the package is imported from the working copy.
A program that exited 0 before must exit 0 after, printing the same lines but for the device it
picks, and the rewrite must have changed the package's own code (else the run proves nothing).
Skipped only when an artifact is not in the cache and PyPI cannot be reached.
"""

from __future__ import annotations

import importlib.util
import shutil
import socket
import subprocess
import sys
import urllib.error
from pathlib import Path
from types import ModuleType

import pytest
from behaviour_harness import Program, _run_all, _same

from neuron_migrate.api import rewrite_paths
from neuron_migrate.config import Settings
from neuron_migrate.findings import Target
from neuron_migrate.rewrite.engine import FileStatus

HERE = Path(__file__).parent
FETCH = HERE.parents[2] / "benchmarks" / "corpus" / "fetch.py"
# corpus package -> (driver in third_party/, the package's directories the driver imports)
DRIVERS = {
    "accelerate": ("accelerate_loop.py", ("accelerate",)),
    "diffusers": ("diffusers_utils.py", ("diffusers",)),
    "torch-scatter": ("scatter_testing.py", ("torch_scatter",)),
}


def _fetch_module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("corpus_fetch_behaviour", FETCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def _pypi_reachable() -> bool:
    try:
        socket.create_connection(("pypi.org", 443), timeout=10).close()
    except OSError:
        return False
    return True


@pytest.fixture(scope="module")
def packages() -> dict[str, tuple[Path, tuple[str, ...]]]:
    """name -> (extracted tree in the corpus cache, its annotated files)."""
    fetch = _fetch_module()
    pinned = {p.name: p for p in fetch.load_packages() if p.name in DRIVERS}
    assert set(pinned) == set(DRIVERS), "a driver's package is not pinned in benchmarks/corpus/packages.yaml"
    root = fetch.cache_dir()
    root.mkdir(parents=True, exist_ok=True)
    out = {}
    for name, pkg in pinned.items():
        try:
            out[name] = (fetch.fetch_one(pkg, root), pkg.files)
        except (OSError, urllib.error.URLError, subprocess.CalledProcessError) as exc:
            if _pypi_reachable():
                raise
            pytest.skip(f"{pkg.artifact} is not cached and PyPI cannot be reached: {exc}")
    return out


def _working_copy(tmp_path: Path, packages: dict[str, tuple[Path, tuple[str, ...]]]) -> tuple[list[Program], list[Path]]:
    """Per package a directory with the driver and the package's code; the programs and the files
    to rewrite (each driver and its package's annotated files)."""
    programs: list[Program] = []
    files: list[Path] = []
    for name, (driver, dirs) in DRIVERS.items():
        tree, annotated = packages[name]
        work = tmp_path / name
        for d in dirs:
            shutil.copytree(tree / d, work / d, ignore=shutil.ignore_patterns("__pycache__"))
        shutil.copy2(HERE / "third_party" / driver, work / driver)
        programs.append(Program(name, work / driver))
        files.append(work / driver)
        files += [work / f for f in annotated if f.split("/", 1)[0] in dirs]
    return programs, files


@pytest.mark.slow
@pytest.mark.parametrize("target", list(Target), ids=lambda t: t.value)
def test_third_party_programs_still_run_the_same(tmp_path: Path, packages: dict[str, tuple[Path, tuple[str, ...]]],
                                                 target: Target) -> None:
    programs, files = _working_copy(tmp_path, packages)
    before = _run_all(programs, target)
    not_run = [(p.name, r["stderr"][-1500:]) for p, r in zip(programs, before, strict=True) if r["rc"] != 0]
    assert not not_run, not_run  # every driver runs before the rewrite, or the harness proves nothing
    originals = {f: f.read_bytes() for f in files}
    settings = Settings(target=target, unsafe_fixes=False, respect_gitignore=False)
    result = rewrite_paths(files, settings, apply=True, unsafe=False, allow_dirty=True, target=target, use_cache=False)
    broken = [o for o in result.files if o.status is FileStatus.SKIPPED and o.reason.startswith("internal error")]
    assert not broken, broken
    for name, (driver, _dirs) in DRIVERS.items():
        changed = [f for f in files if f.is_relative_to(tmp_path / name) and f.name != driver
                   and f.read_bytes() != originals[f]]
        assert changed, f"{name}: the rewrite changed none of its files"
    after = _run_all(programs, target)
    failures = []
    for program, old, new in zip(programs, before, after, strict=True):
        if new["rc"] != 0:
            failures.append(f"{program.name}: exit {new['rc']} after the rewrite (0 before)\n{new['stderr'][-2000:]}")
            continue
        why = _same(str(old["stdout"]), str(new["stdout"]), target)
        if why:
            failures.append(f"{program.name}: {why}")
    assert not failures, "\n\n".join(failures)
