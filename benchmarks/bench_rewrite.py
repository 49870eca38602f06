"""Dry-run rewrite of the installed torch package tree, against a scan alone.

    python benchmarks/bench_rewrite.py [--target neuron|accelerator] [--unsafe-fixes] [--full-libcst]

Prints: files scanned; scan time (no cache, all cores); dry-run rewrite time (the same scan, the
pipeline, then fixes applied in memory, nothing written) and the part spent rewriting; how many
files libcst parsed (only files with an applicable fix) and how often; `ast` vs libcst parse
time on those files; and ratios. `--full-libcst` also times libcst on every file, the cost of a
codemod that parsed everything. The torch tree is located without importing torch.
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
import sys
import time
from pathlib import Path

from neuron_migrate.config import Settings
from neuron_migrate.findings import Target


def torch_tree() -> Path:
    spec = importlib.util.find_spec("torch")  # a top-level package: found, not imported
    if spec is None or not spec.submodule_search_locations:
        sys.exit("torch is not installed")
    return Path(next(iter(spec.submodule_search_locations)))


def _parse_times(files: list[Path]) -> tuple[float, float, int]:
    """(ast seconds, libcst seconds, files libcst could not parse) over `files`."""
    import libcst

    ast_s = cst_s = 0.0
    failed = 0
    for path in files:
        text = path.read_text(encoding="utf-8", errors="surrogateescape")
        t0 = time.perf_counter()
        try:
            ast.parse(text)
        except SyntaxError:
            pass
        t1 = time.perf_counter()
        try:
            libcst.parse_module(text)
        except Exception:  # libcst's grammar lags CPython's; count, do not stop
            failed += 1
        cst_s += time.perf_counter() - t1
        ast_s += t1 - t0
    return ast_s, cst_s, failed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--target", choices=[t.value for t in Target], default="neuron")
    parser.add_argument("--unsafe-fixes", action="store_true")
    parser.add_argument("--full-libcst", action="store_true", help="also time libcst on every file (slow)")
    args = parser.parse_args()
    target = Target(args.target)
    root = torch_tree()

    import libcst

    from neuron_migrate.rewrite.api import FileStatus, rewrite_paths
    from neuron_migrate.ruleset.load import load_pack
    from neuron_migrate.scan.engine import scan_paths

    pack = load_pack()
    settings = Settings(target=target, unsafe_fixes=args.unsafe_fixes)

    t0 = time.perf_counter()
    scan = scan_paths([root], pack, use_cache=False)
    scan_s = time.perf_counter() - t0

    parses = 0
    real_parse = libcst.parse_module

    def counting_parse(*a, **kw):  # type: ignore[no-untyped-def]
        nonlocal parses
        parses += 1
        return real_parse(*a, **kw)

    libcst.parse_module = counting_parse  # type: ignore[assignment]
    try:
        t0 = time.perf_counter()
        result = rewrite_paths(
            [root], settings, apply=False, unsafe=args.unsafe_fixes, allow_dirty=True, target=target, use_cache=False
        )
        total_s = time.perf_counter() - t0
    finally:
        libcst.parse_module = real_parse  # type: ignore[assignment]

    touched = [o for o in result.files]
    changed = [o for o in touched if o.status is FileStatus.CHANGED]
    skipped = [o for o in touched if o.status is FileStatus.SKIPPED]
    fixable_paths = [Path(result.root) / o.path for o in touched if o.path.endswith(".py")]
    ast_s, cst_s, cst_failed = _parse_times(fixable_paths)
    rewrite_s = total_s - scan_s

    print(f"torch tree:                {root}")
    print(f"files scanned:             {scan.files_scanned}")
    print(f"findings (after pipeline): {len(result.findings)}; fixed in dry run: {len(result.fixed)}")
    print(f"files with a fix to apply: {len(touched)} ({len(touched) / max(scan.files_scanned, 1):.1%} of scanned); "
          f"would change {len(changed)}, skipped {len(skipped)}")
    for o in skipped[:10]:
        print(f"  skipped {o.path}: {o.reason}")
    print(f"libcst parses:             {parses} (validation and import removal, files with fixes only)")
    print(f"scan alone:                {scan_s:.2f} s")
    print(f"dry-run rewrite:           {total_s:.2f} s (scan + pipeline + rewrite); rewriting part ~{rewrite_s:.2f} s")
    print(f"ratio rewrite/scan:        {total_s / scan_s:.2f}x")
    print(f"on the {len(fixable_paths)} fixable files: ast {ast_s:.2f} s, libcst {cst_s:.2f} s "
          f"({cst_s / max(ast_s, 1e-9):.1f}x ast; libcst failed on {cst_failed})")
    if args.full_libcst:
        every = sorted(p for p in root.rglob("*.py") if "__pycache__" not in p.parts)
        all_ast, all_cst, all_failed = _parse_times(every)
        print(f"libcst on every file:      {all_cst:.2f} s for {len(every)} files (ast {all_ast:.2f} s; "
              f"libcst failed on {all_failed}); parsing only fixable files saves {all_cst - cst_s:.2f} s")


if __name__ == "__main__":
    main()
