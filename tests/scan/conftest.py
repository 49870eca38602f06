"""Helpers for the tests that scan small projects written on disk (project facts, kernel modules),
and the partial parse as its tests need it."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from neuron_migrate.ruleset.load import load_pack
from neuron_migrate.scan import regions
from neuron_migrate.scan.engine import scan_paths

PACK = load_pack()


@pytest.fixture(autouse=True)
def split_where_anything_is_skipped(monkeypatch: pytest.MonkeyPatch) -> None:
    """The partial parse on every file it can split, however little it skips: the scan tests
    compare its findings with the whole parse's on small cases, where the default
    (`scan.regions.MIN_SKIPPED_SHARE`) would often parse whole and compare nothing."""
    monkeypatch.setattr(regions, "MIN_SKIPPED_SHARE", 0.0)


def write(root: Path, files: dict[str, str]) -> None:
    """Each file's text, dedented, at its path under `root`."""
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")


def sites(root: Path, code: str, **kw: object) -> set[tuple[str, int]]:
    """(path, line) of each `code` finding of a scan of `root`."""
    result = scan_paths([root], PACK, jobs=1, **kw)  # type: ignore[arg-type]
    return {(f.path, f.span.line) for f in result.findings if f.code == code}


def marked(files: dict[str, str]) -> set[tuple[str, int]]:
    """(path, line) of each line of `files` that ends with `# <-`: where a test expects a finding."""
    return {(rel, i) for rel, text in files.items()
            for i, line in enumerate(textwrap.dedent(text).lstrip("\n").split("\n"), 1) if line.endswith("# <-")}
