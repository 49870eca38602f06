"""Dry-run rewrite of the installed torch package tree, against a scan alone.

    python benchmarks/bench_rewrite.py [--target neuron|accelerator] [--unsafe-fixes] [--jobs N] [--full-libcst]
    python benchmarks/bench_rewrite.py --many-fixes N

`--many-fixes N` instead times applying the fixes of one generated file with N fixes (half of
its lines carry two overlapping fixes, `@torch.compile(mode="max-autotune")`) against one with
N/8, and prints the ratio: about 8 when the cost grows linearly with the fixes, 64 if quadratic.

Prints: files scanned; the cold scan's time (no cache, all cores); the rewrite stage's time on
the scan's findings (fixes applied in memory, nothing written); how many files had a fix to apply
(the only ones read again and parsed with libcst, once each: counted with `--jobs 1`); `ast` vs
libcst parse time on those files; and ratios. `--full-libcst` also times libcst on every file,
the cost of a codemod that parsed everything. The torch tree is located without importing torch.
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
        except Exception:  # noqa: BLE001 - libcst's grammar lags CPython's; count, do not stop
            failed += 1
        cst_s += time.perf_counter() - t1
        ast_s += t1 - t0
    return ast_s, cst_s, failed


def _many_fixes_source(n: int) -> str:
    """About `n` applicable fixes (with --unsafe-fixes): `.cuda()` calls and compile decorators
    whose two fixes overlap (one is applied, one skipped)."""
    parts = ["import torch\n"]
    for i in range(n // 3):
        parts.append(f"x{i} = torch.ones(1).cuda()\n\n\n@torch.compile(mode=\"max-autotune\")\ndef f{i}(x):\n    return x\n")
    return "".join(parts)


def _time_many_fixes(n: int) -> tuple[int, int, float]:
    """(fixes to apply, fixes applied, seconds to apply them) for the generated file of `n` fixes."""
    from neuron_migrate.rewrite.apply import applicable_fix, apply_fixes_to_source
    from neuron_migrate.ruleset.load import load_pack
    from neuron_migrate.scan.analyze import analyze_source

    source = _many_fixes_source(n)
    findings = analyze_source(source, "many.py", load_pack())
    fixable = sum(1 for f in findings if applicable_fix(f, Target.NEURON, unsafe=True))
    t0 = time.perf_counter()
    result = apply_fixes_to_source(source, findings, Target.NEURON, unsafe=True)
    return fixable, len(result.applied), time.perf_counter() - t0


def many_fixes(n: int) -> None:
    small_n = max(n // 8, 1)
    _time_many_fixes(small_n)  # warm up: imports, libcst's parser tables
    small = _time_many_fixes(small_n)
    large = _time_many_fixes(n)
    for label, (fixable, applied, seconds) in (("small", small), ("large", large)):
        print(f"{label}: {fixable} fixes to apply, {applied} applied (the rest overlap), {seconds:.2f} s")
    print(f"large/small: {large[0] / small[0]:.1f}x the fixes, {large[2] / max(small[2], 1e-9):.1f}x the time "
          "(linear: about the same factor; quadratic: its square)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--target", choices=[t.value for t in Target], default="neuron")
    parser.add_argument("--unsafe-fixes", action="store_true")
    parser.add_argument("--jobs", type=int, default=None, help="rewrite worker processes (default: all cores; "
                        "with 1, libcst parses are counted)")
    parser.add_argument("--full-libcst", action="store_true", help="also time libcst on every file (slow)")
    parser.add_argument("--many-fixes", type=int, metavar="N", help="time one file with N fixes against N/8 instead")
    args = parser.parse_args()
    if args.many_fixes:
        many_fixes(args.many_fixes)
        return
    target = Target(args.target)
    root = torch_tree()

    import libcst

    from neuron_migrate.pipeline.finalize import build_report
    from neuron_migrate.rewrite.engine import FileStatus, rewrite_findings
    from neuron_migrate.ruleset.load import load_pack
    from neuron_migrate.scan.engine import scan_paths

    pack = load_pack()
    t0 = time.perf_counter()
    scan = scan_paths([root], pack, use_cache=False)
    scan_s = time.perf_counter() - t0
    report = build_report(scan, Settings(target=target, unsafe_fixes=args.unsafe_fixes), pack)

    parses = 0
    real_parse = libcst.parse_module

    def counting_parse(*a, **kw):  # type: ignore[no-untyped-def]
        nonlocal parses
        parses += 1
        return real_parse(*a, **kw)

    libcst.parse_module = counting_parse  # type: ignore[assignment]
    try:
        t0 = time.perf_counter()
        outcomes = rewrite_findings(Path(scan.root), report.findings, target=target, unsafe=args.unsafe_fixes,
                                    apply=False, jobs=args.jobs)
        rewrite_s = time.perf_counter() - t0
    finally:
        libcst.parse_module = real_parse  # type: ignore[assignment]

    changed = [o for o in outcomes if o.status is FileStatus.CHANGED]
    skipped = [o for o in outcomes if o.status is FileStatus.SKIPPED]
    fixed = sum(len(o.applied) for o in changed)
    fixable_paths = [Path(scan.root) / o.path for o in outcomes if o.path.endswith(".py")]
    ast_s, cst_s, cst_failed = _parse_times(fixable_paths)

    print(f"torch tree:                {root}")
    print(f"files scanned:             {scan.files_scanned}")
    print(f"findings:                  {len(report.findings)}; fixes applied in memory: {fixed}")
    print(f"files with a fix to apply: {len(outcomes)} ({len(outcomes) / max(scan.files_scanned, 1):.1%} of scanned); "
          f"would change {len(changed)}, skipped {len(skipped)}")
    for o in skipped[:10]:
        print(f"  skipped {o.path}: {o.reason}")
    counted = f"{parses}" if args.jobs == 1 else "not counted across worker processes (use --jobs 1)"
    print(f"libcst parses:             {counted}")
    print(f"scan alone (cold, no cache): {scan_s:.2f} s")
    print(f"rewrite stage (dry run):   {rewrite_s:.2f} s  (jobs={args.jobs or 'all cores'})")
    print(f"scan + rewrite:            {scan_s + rewrite_s:.2f} s = {(scan_s + rewrite_s) / scan_s:.2f}x the scan alone")
    print(f"fixable files, one core:   ast {ast_s:.2f} s, libcst {cst_s:.2f} s "
          f"({cst_s / max(ast_s, 1e-9):.1f}x ast; libcst failed on {cst_failed})")
    if args.full_libcst:
        every = sorted(p for p in root.rglob("*.py") if "__pycache__" not in p.parts)
        all_ast, all_cst, all_failed = _parse_times(every)
        print(f"libcst on every file:      {all_cst:.2f} s for {len(every)} files (ast {all_ast:.2f} s; "
              f"libcst failed on {all_failed}); parsing only fixable files saves {all_cst - cst_s:.2f} s")


if __name__ == "__main__":
    main()
