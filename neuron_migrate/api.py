"""Library entry points for people who call neuron-migrate from Python (the CLI uses the engines
directly, through the same functions). Importing this module is cheap and never imports torch."""

from __future__ import annotations

from collections.abc import Sequence
from os import PathLike
from pathlib import Path
from typing import Any

from neuron_migrate.scan.result import ScanResult

__all__ = ["scan"]


def scan(paths: Sequence[str | PathLike[str]] = (".",), *, rule_files: Sequence[str | PathLike[str]] = (),
         **options: Any) -> ScanResult:
    """Scan files and directories with the built-in rule pack (plus `rule_files`).

    `options` are those of `neuron_migrate.scan.engine.scan_paths` (include, exclude,
    respect_gitignore, use_cache, cache_dir, jobs, progress, root, max_file_size). The result holds
    raw findings; `neuron_migrate.pipeline.build_report` applies selection, suppressions and baselines.
    """
    from neuron_migrate.ruleset.load import load_pack
    from neuron_migrate.scan.engine import scan_paths

    return scan_paths([Path(p) for p in paths], load_pack([Path(f) for f in rule_files]), **options)
