"""Scan speed on the installed torch package's Python sources, against ruff and TorchFix.

    python benchmarks/bench_scan.py [--repeat 3] [--rounds 3] [--torchfix-subtree nn] [--torchfix-timeout 300]

Prints, from one run: the tree's size; reading every file + a regex; stdlib `ast` parse rate on
one core; ruff (one rule, no cache); CPython's parser (`symtable`, no syntax objects) over the files the
scan's gate passes, on all cores, the floor of any scan that must see their syntax errors;
neuron-migrate cold (no cache, all cores) and warm (cache
filled, nothing changed), both as the library call in a fresh process and as the full CLI
(`neuron-migrate scan`, text report to /dev/null); TorchFix on a subtree it can finish; and ratios
against ruff. Cold scans run in `--rounds` paired rounds with ruff (ruff, library, CLI back to
back); each round gives a ratio and the verdict uses their median. Targets: cold <= 10x ruff,
warm <= 1.5x ruff. The torch tree is located without importing torch; the cache goes to a
temporary directory, never into site-packages.
"""

from __future__ import annotations

import argparse
import ast
import concurrent.futures
import importlib.util
import os
import re
import shutil
import statistics
import subprocess
import symtable
import sys
import tempfile
import time
import warnings
from pathlib import Path

COLD_TARGET = 10.0
WARM_TARGET = 1.5


def torch_tree() -> Path:
    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        sys.exit("torch is not installed")
    return Path(next(iter(spec.submodule_search_locations)))


def python_files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*.py") if "__pycache__" not in p.parts)


def timed(command: list[str], *, env: dict[str, str] | None = None, timeout: float | None = None) -> tuple[float, int | None]:
    """Wall time of a subprocess, and its exit code (None when it timed out)."""
    start = time.perf_counter()
    try:
        rc = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env,
                            timeout=timeout, check=False).returncode
    except subprocess.TimeoutExpired:
        return time.perf_counter() - start, None
    return time.perf_counter() - start, rc


def best(command: list[str], repeat: int, env: dict[str, str] | None = None) -> float:
    times = []
    for _ in range(repeat):
        seconds, rc = timed(command, env=env)
        if rc is None or rc >= 2:
            sys.exit(f"failed (exit {rc}): {' '.join(command)}")
        times.append(seconds)
    return min(times)


def _syntax_checked(source: bytes) -> bool:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            symtable.symtable(source.decode("utf-8", "replace"), "<gated>", "exec")
        except (SyntaxError, ValueError, RecursionError):
            return False
    return True


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3, help="runs per fast measurement (best is kept)")
    parser.add_argument("--rounds", type=int, default=3, help="paired rounds of ruff and the cold scans")
    parser.add_argument("--torchfix-subtree", default="nn", help="subtree of torch/ for TorchFix")
    parser.add_argument("--torchfix-timeout", type=float, default=300.0)
    args = parser.parse_args()

    tree = torch_tree()
    files = python_files(tree)
    sources = [f.read_bytes() for f in files]
    lines = sum(s.count(b"\n") for s in sources)
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    print(f"tree: {tree}\nfiles: {len(files)} .py, lines: {lines:,}, MB: {sum(map(len, sources)) / 1e6:.1f}, cpus: {cpus}")
    rows: list[tuple[str, float | None, str]] = []

    # Reading every file and matching a regex: the floor for anything that looks at every file.
    pattern = re.compile(rb"\bcuda\b")
    start = time.perf_counter()
    hits = sum(len(pattern.findall(f.read_bytes())) for f in files)
    rows.append(("read every file + regex", time.perf_counter() - start, f"{hits} matches"))

    start = time.perf_counter()
    unparsable = 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for source in sources:
            try:
                ast.parse(source)
            except SyntaxError:  # torch ships files in syntax newer than this Python
                unparsable += 1
    parse_s = time.perf_counter() - start
    rows.append(("stdlib ast.parse, 1 core", parse_s,
                 f"{lines / parse_s / 1000:.0f} k lines/s; {unparsable} files need a newer Python"))

    # The parse floor: CPython's parser over every file the scan's gate passes (each must be read
    # for syntax errors at least), without building syntax objects, on all cores.
    from neuron_migrate.ruleset.load import load_pack
    from neuron_migrate.scan.prefilter import build_prefilter

    gate = build_prefilter(load_pack())
    gated = [s for s in sources if gate.may_match(s)]
    start = time.perf_counter()
    with concurrent.futures.ProcessPoolExecutor(cpus) as pool:
        checked = sum(pool.map(_syntax_checked, gated, chunksize=16))
    rows.append(("parse floor: symtable of gated files, all cores", time.perf_counter() - start,
                 f"{len(gated)} files, {sum(map(len, gated)) / 1e6:.1f} MB, {checked} valid"))

    ruff = shutil.which("ruff")
    ruff_cmd = [ruff, "check", "--select", "E9", "--no-cache", "--exit-zero", "--quiet", str(tree)] if ruff else []
    ruff_s = None
    cold_ratios: dict[str, list[float]] = {}

    with tempfile.TemporaryDirectory() as cache:
        env = {**os.environ, "NEURON_MIGRATE_CACHE_DIR": cache}
        library = [sys.executable, "-c",
                   "import sys; from neuron_migrate.api import scan; "
                   "r = scan([sys.argv[1]], use_cache=sys.argv[2] == '1'); "
                   "print(r.files_scanned, len(r.findings))", str(tree)]
        cli = [sys.executable, "-m", "neuron_migrate", "scan", str(tree), "--quiet", "--exit-zero",
               "--output", os.devnull]
        counted = subprocess.run([*library, "0"], capture_output=True, text=True, env=env, check=True)
        scanned, found = counted.stdout.split()
        # Cold scans in paired rounds (ruff, library, CLI): each round's ratios come from runs made
        # back to back, so a slow moment of the machine does not favour one side; medians reported.
        cold = {"library": [*library, "0"], "CLI": [*cli, "--no-cache"]}
        cold_s: dict[str, list[float]] = {name: [] for name in cold}
        ruff_runs: list[float] = []
        for _ in range(args.rounds):
            if ruff:
                ruff_runs.append(best(ruff_cmd, 1))
            for name, command in cold.items():
                cold_s[name].append(best(command, 1, env))
                if ruff:
                    cold_ratios.setdefault(name, []).append(cold_s[name][-1] / ruff_runs[-1])
        if ruff:
            ruff_s = statistics.median(ruff_runs)
            rows.append(("ruff check --select E9 --no-cache", ruff_s, f"median of {args.rounds}"))
        else:
            rows.append(("ruff", None, "not installed (pip install ruff)"))
        rows.append(("neuron-migrate cold (library, no cache)", statistics.median(cold_s["library"]),
                     f"{scanned} files, {found} raw findings"))
        rows.append(("neuron-migrate cold (CLI, --no-cache)", statistics.median(cold_s["CLI"]),
                     "incl. pipeline + text report"))
        subprocess.run([*library, "1"], env=env, check=True, capture_output=True)  # fill the cache
        filled = {p: p.stat().st_mtime_ns for p in Path(cache).glob("scan-*")}
        rows.append(("neuron-migrate warm (library, cache)", best([*library, "1"], args.repeat, env), ""))
        rows.append(("neuron-migrate warm (CLI, cache)", best(cli, args.repeat, env), "incl. pipeline + text report"))
        if {p: p.stat().st_mtime_ns for p in Path(cache).glob("scan-*")} != filled:
            print("WARNING: the cache was rewritten during the warm runs (scan code edited meanwhile?): "
                  "warm times are not cache hits")

    torchfix = shutil.which("torchfix")
    subtree = tree / args.torchfix_subtree
    if torchfix:
        sub_lines = sum(p.read_bytes().count(b"\n") for p in python_files(subtree))
        seconds, rc = timed([torchfix, str(subtree)], timeout=args.torchfix_timeout)
        note = f"torch/{args.torchfix_subtree}: {sub_lines:,} lines" + (
            f"; did not finish in {args.torchfix_timeout:.0f} s" if rc is None else f"; {sub_lines / seconds / 1000:.1f} k lines/s")
        rows.append((f"TorchFix on torch/{args.torchfix_subtree}", seconds, note))
        with tempfile.TemporaryDirectory() as cache:
            env = {**os.environ, "NEURON_MIGRATE_CACHE_DIR": cache}
            nm_sub = best([*library[:-1], str(subtree), "0"], 1, env)
        rows.append((f"neuron-migrate cold on torch/{args.torchfix_subtree}", nm_sub,
                     f"TorchFix / neuron-migrate = {seconds / nm_sub:.1f}x" + (" (at least)" if rc is None else "")))
    else:
        rows.append(("TorchFix", None, "not installed (pip install torchfix)"))

    print()
    width = max(len(name) for name, _, _ in rows)
    for name, seconds, note in rows:
        shown = f"{seconds:8.3f} s" if seconds is not None else "       -  "
        ratio = f"{seconds / ruff_s:6.2f}x ruff" if seconds is not None and ruff_s else " " * 11
        print(f"{name:<{width}}  {shown}  {ratio}  {note}")
    if ruff_s:
        results = dict((name, s) for name, s, _ in rows)
        print()
        for name, ratios in cold_ratios.items():
            median = statistics.median(ratios)
            print(f"cold ({name}) {median:.2f}x ruff, median of rounds {', '.join(f'{r:.2f}' for r in ratios)} "
                  f"(target <= {COLD_TARGET:g}x): {'met' if median <= COLD_TARGET else 'MISSED'}")
        warm = results["neuron-migrate warm (library, cache)"] / ruff_s
        warm_cli = results["neuron-migrate warm (CLI, cache)"] / ruff_s
        # The target is the repeat scan end to end through the CLI (issue 12); the library call is shown beside it.
        print(f"warm (CLI) {warm_cli:.2f}x ruff (target <= {WARM_TARGET:g}x): {'met' if warm_cli <= WARM_TARGET else 'MISSED'}; "
              f"library {warm:.2f}x")


if __name__ == "__main__":
    main()
