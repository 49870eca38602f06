"""Library entry points for people who call neuron-migrate from Python (the CLI uses the engines
directly, through the same functions). Importing this module is cheap and never imports torch."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from os import PathLike
from pathlib import Path
from typing import TYPE_CHECKING, Any

from neuron_migrate.scan.result import ScanResult

if TYPE_CHECKING:
    from neuron_migrate.config import Settings
    from neuron_migrate.ruleset.model import RulePack

__all__ = ["scan", "scan_with_settings"]


def scan(paths: Sequence[str | PathLike[str]] = (".",), *, rule_files: Sequence[str | PathLike[str]] = (),
         **options: Any) -> ScanResult:
    """Scan files and directories with the built-in rule pack (plus `rule_files`).

    `options` are those of `neuron_migrate.scan.engine.scan_paths` (include, exclude,
    respect_gitignore, use_cache, cache_dir, jobs, progress, root, max_file_size). The result holds
    raw findings; `neuron_migrate.pipeline.finalize.build_report` applies selection, suppressions and baselines.
    """
    from neuron_migrate.ruleset.load import load_pack
    from neuron_migrate.scan.engine import scan_paths

    return scan_paths([Path(p) for p in paths], load_pack([Path(f) for f in rule_files]), **options)


def scan_with_settings(
    paths: Sequence[Path],
    settings: Settings,
    pack: RulePack,
    *,
    use_cache: bool = True,
    jobs: int | None = None,
    progress: Callable[[int, int], None] | None = None,
    root: Path | None = None,
) -> ScanResult:
    """`scan_paths` with the file-selection and cache settings of a run (include, exclude,
    respect-gitignore, cache-dir): what `scan`, `rewrite` and `report` all read."""
    from neuron_migrate.scan.engine import scan_paths

    return scan_paths(
        paths,
        pack,
        include=settings.include,
        exclude=settings.exclude,
        respect_gitignore=settings.respect_gitignore,
        use_cache=use_cache,
        cache_dir=settings.cache_dir,
        jobs=jobs,
        progress=progress,
        root=root,
    )
