"""Precision and recall of `neuron-migrate scan` on the real-code corpus, against a plain grep.

    python benchmarks/bench_corpus.py [--dest DIR] [--json OUT] [--quiet]

Fetches the pinned packages of benchmarks/corpus/packages.yaml (see corpus/fetch.py), runs the
CLI (`neuron-migrate scan . --format json --no-cache`) in each extracted tree, and scores the
findings in the annotated files against the hand-made annotations (corpus/README.md has the
format and the matching rule). The whole tree is scanned so that nothing depends on which files
were chosen for annotation; only annotated files are scored. NM8xx findings (dtype and layout
hazards) are left out, as are the tool's own NM0xx diagnostics (a syntax error in an annotated
file is printed, since it hides every site of that file).

Prints overall precision and required-site recall, the same per category, the grep baseline
(a case-insensitive grep for corpus/grep-tokens.txt), then every missed required site and every
reported line that matches no site, so the numbers can be acted on.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent / "corpus"))

import fetch
import groundtruth as gt

Reported = dict[tuple[str, str], dict[int, str]]


def scan_tree(tree: Path) -> list[dict]:
    """The CLI's JSON findings for one extracted package (paths relative to `tree`)."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "findings.json"
        cmd = [sys.executable, "-m", "neuron_migrate", "scan", ".", "--format", "json", "--no-cache",
               "--exit-zero", "--no-respect-gitignore", "--quiet", "--output", str(out)]
        proc = subprocess.run(cmd, cwd=tree, capture_output=True, text=True, check=False,
                              env={**os.environ, "NO_COLOR": "1"})
        if proc.returncode != 0 or not out.is_file():
            raise RuntimeError(f"scan of {tree} failed (exit {proc.returncode}): {proc.stderr.strip()[-2000:]}")
        return json.loads(out.read_text(encoding="utf-8"))["findings"]


def collect(packages: list[fetch.Package], trees: dict[str, Path]) -> tuple[Reported, Reported, list[str]]:
    """Reported lines of the scanner and of grep in the annotated files, and tool diagnostics."""
    pattern = gt.grep_pattern()
    scanner: Reported = defaultdict(dict)
    grep: Reported = defaultdict(dict)
    diagnostics: list[str] = []
    for pkg in packages:
        tree = trees[pkg.name]
        files = set(pkg.files)
        for f in scan_tree(tree):
            path, code, line = f["path"], f["code"], int(f["span"]["line"])
            if path not in files:
                continue
            if code.startswith("NM0"):
                diagnostics.append(f"{pkg.name}: {path}:{line}: {code} {f['message']}")
                continue
            if code.startswith("NM8"):
                continue
            scanner[(pkg.name, path)].setdefault(line, f["category"])
        for rel in pkg.files:
            text = (tree / rel).read_text(encoding="utf-8", errors="replace")
            for n in gt.grep_lines(text, pattern):
                grep[(pkg.name, rel)][n] = "grep"
    return scanner, grep, diagnostics


def sites_by_file(packages: list[fetch.Package]) -> dict[tuple[str, str], list[gt.Site]]:
    out: dict[tuple[str, str], list[gt.Site]] = defaultdict(list)
    for pkg in packages:
        for s in gt.load_annotations(pkg.name).sites:
            out[(pkg.name, s.file)].append(s)
    return out


def measure(dest: Path | None = None) -> dict:
    packages = fetch.load_packages()
    trees = fetch.fetch_all(dest, packages)
    sites = sites_by_file(packages)
    scanner, grep, diagnostics = collect(packages, trees)
    by_package: dict[str, dict[str, Reported]] = {"scanner": {}, "grep": {}}
    for label, reported in (("scanner", scanner), ("grep", grep)):
        for key, lines in reported.items():
            by_package[label].setdefault(key[0], {})[key] = lines
    return {"scanner": gt.score(sites, scanner), "grep": gt.score(sites, grep), "diagnostics": diagnostics,
            "packages": packages, "sites": sites, "reported": by_package}


def _ratio(a: int, b: int) -> str:
    return f"{a / b:.3f}" if b else "  -  "


def report(m: dict, *, quiet: bool = False) -> None:
    s: gt.Score = m["scanner"]
    g: gt.Score = m["grep"]
    sites = [x for group in m["sites"].values() for x in group]
    print(f"corpus: {len(m['packages'])} packages, {sum(len(p.files) for p in m['packages'])} annotated files, "
          f"{sum(x.required for x in sites)} required + {sum(not x.required for x in sites)} optional sites")
    print(f"{'':10} {'precision':>10} {'recall':>8}   (reported lines, true; required sites, found)")
    print(f"{'scan':10} {s.precision:10.3f} {s.recall:8.3f}   ({s.reported}, {s.true_reported}; "
          f"{s.required}, {s.found_required})")
    print(f"{'grep':10} {g.precision:10.3f} {g.recall:8.3f}   ({g.reported}, {g.true_reported}; "
          f"{g.required}, {g.found_required})")
    print()
    cats = sorted(c for c in set(s.per_category) | set(g.per_category) if c != "grep")
    print(f"{'category':20} {'required':>8} {'scan found':>10} {'recall':>7} {'grep found':>10} {'recall':>7}"
          f" {'scan reported':>13} {'true':>5} {'precision':>9}")
    for c in cats:
        rep, true, req, found = s.per_category[c]
        g_found = g.per_category[c][3]
        print(f"{c:20} {req:8d} {found:10d} {_ratio(found, req):>7} {g_found:10d} {_ratio(g_found, req):>7}"
              f" {rep:13d} {true:5d} {_ratio(true, rep):>9}")
    print(f"\n{'package':20} {'required':>8} {'scan found':>10} {'recall':>7} {'grep recall':>11}"
          f" {'scan reported':>13} {'precision':>9}")
    for pkg in m["packages"]:
        mine = {k: v for k, v in m["sites"].items() if k[0] == pkg.name}
        ps, pg = gt.score(mine, m["reported"]["scanner"].get(pkg.name, {})), gt.score(mine, m["reported"]["grep"].get(pkg.name, {}))
        print(f"{pkg.name:20} {ps.required:8d} {ps.found_required:10d} {ps.recall:7.3f} {pg.recall:11.3f}"
              f" {ps.reported:13d} {ps.precision:9.3f}")
    if m["diagnostics"]:
        print("\ntool diagnostics in annotated files (their sites are not seen):")
        for d in m["diagnostics"]:
            print("  " + d)
    if quiet:
        return
    print(f"\nmissed required sites ({len(s.missed)}):")
    for x in s.missed:
        print(f"  {x.package}: {x.file}:{x.line} [{x.category}] {x.note}")
    print(f"\nreported lines that match no site ({len(s.unmatched)}):")
    for pkg, path, line, cat in s.unmatched:
        print(f"  {pkg}: {path}:{line} [{cat}]")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dest", type=Path, default=None, help="corpus cache (default: fetch.py's)")
    parser.add_argument("--json", type=Path, default=None, help="also write the figures as JSON to this file")
    parser.add_argument("--quiet", action="store_true", help="figures only, no lists of misses")
    args = parser.parse_args(argv)
    try:
        m = measure(args.dest)
    except (OSError, RuntimeError, subprocess.CalledProcessError) as exc:
        print(f"bench_corpus: {exc}", file=sys.stderr)
        return 1
    report(m, quiet=args.quiet)
    if args.json:
        s, g = m["scanner"], m["grep"]
        args.json.write_text(json.dumps({
            "scan": {"precision": s.precision, "recall": s.recall, "reported": s.reported,
                     "required": s.required, "missed": [f"{x.package}:{x.file}:{x.line}" for x in s.missed],
                     "unmatched": [f"{p}:{f}:{n}" for p, f, n, _ in s.unmatched]},
            "grep": {"precision": g.precision, "recall": g.recall},
        }, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
