"""The corpus's hand-made ground truth: loading, integrity checks, the grep baseline and scoring.

See README.md in this directory for the format and the matching rule. Nothing here imports the
scanner: the ground truth is data read by hand, and scoring takes reported lines from any tool.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
ANNOTATIONS_DIR = HERE / "annotations"
GREP_TOKENS_FILE = HERE / "grep-tokens.txt"
RULES_DIR = HERE.parent.parent / "rules"
# Reasons a grep hit is not a site; README.md says what each one covers.
NOT_A_SITE_REASONS = frozenset({
    "comment", "docstring", "message", "help", "name", "generic", "string", "dead",
})


@dataclass(frozen=True)
class Site:
    package: str
    file: str
    line: int
    category: str
    required: bool
    note: str
    also: tuple[int, ...] = ()

    @property
    def lines(self) -> tuple[int, ...]:
        return (self.line, *self.also)


@dataclass(frozen=True)
class NotSite:
    package: str
    file: str
    line: int
    reason: str
    note: str = ""


@dataclass
class Annotations:
    package: str
    sites: list[Site] = field(default_factory=list)
    not_sites: list[NotSite] = field(default_factory=list)


def load_annotations(package: str, directory: Path = ANNOTATIONS_DIR) -> Annotations:
    data = yaml.safe_load((directory / f"{package}.yaml").read_text(encoding="utf-8"))
    if data.get("package") != package:
        raise ValueError(f"{package}.yaml: `package` is {data.get('package')!r}")
    ann = Annotations(package)
    for entry in data.get("sites") or []:
        ann.sites.append(Site(package, str(entry["file"]), int(entry["line"]), str(entry["category"]),
                              bool(entry["required"]), str(entry.get("note", "")),
                              tuple(int(x) for x in entry.get("also", ()))))
    for entry in data.get("not_sites") or []:
        ann.not_sites.append(NotSite(package, str(entry["file"]), int(entry["line"]), str(entry["reason"]),
                                     str(entry.get("note", ""))))
    return ann


def grep_tokens(path: Path = GREP_TOKENS_FILE) -> list[str]:
    lines = path.read_text(encoding="utf-8").splitlines()
    return [t.strip() for t in lines if t.strip() and not t.lstrip().startswith("#")]


def grep_pattern(tokens: Iterable[str] | None = None) -> re.Pattern[str]:
    return re.compile("|".join(re.escape(t) for t in (tokens or grep_tokens())), re.IGNORECASE)


def grep_lines(text: str, pattern: re.Pattern[str]) -> set[int]:
    """1-based numbers of the lines that hold a token anywhere (code, comment or string alike)."""
    return {i for i, line in enumerate(text.splitlines(), 1) if pattern.search(line)}


def scanner_categories(rules_dir: Path = RULES_DIR) -> set[str]:
    """Finding categories of the scanner's own rule tables (rules/nm*.yaml)."""
    cats: set[str] = set()
    for path in sorted(rules_dir.glob("nm*.yaml")):
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
        rules = data["rules"] if isinstance(data, dict) else data
        cats |= {str(r["category"]) for r in rules}
    return cats - {"tool", "runtime"}


def integrity_problems(ann: Annotations, tree: Path, files: Iterable[str], categories: set[str],
                       pattern: re.Pattern[str]) -> list[str]:
    """Everything wrong with one package's annotations against its extracted tree."""
    problems: list[str] = []
    files = list(files)
    texts: dict[str, list[str]] = {}
    for rel in files:
        path = tree / rel
        if not path.is_file():
            problems.append(f"{ann.package}: annotated file {rel} is not in the artifact")
            continue
        texts[rel] = path.read_text(encoding="utf-8", errors="replace").splitlines()
    site_lines: dict[tuple[str, int], Site] = {}
    covered: set[tuple[str, int]] = set()  # own and `also` lines of all sites
    for s in ann.sites:
        where = f"{ann.package}: {s.file}:{s.line}"
        if s.file not in files:
            problems.append(f"{where}: file is not listed in packages.yaml")
            continue
        if s.category not in categories:
            problems.append(f"{where}: category {s.category!r} is not a scanner category")
        if not s.note:
            problems.append(f"{where}: site without a note")
        lines = texts.get(s.file)
        if lines is not None:
            for n in s.lines:
                if not 1 <= n <= len(lines) or not lines[n - 1].strip():
                    problems.append(f"{where}: line {n} is out of range or blank")
        if (s.file, s.line) in site_lines:
            problems.append(f"{where}: annotated twice")
        site_lines[(s.file, s.line)] = s
        covered.update((s.file, n) for n in s.lines)
    not_lines: set[tuple[str, int]] = set()
    for ns in ann.not_sites:
        where = f"{ann.package}: {ns.file}:{ns.line}"
        if ns.file not in files:
            problems.append(f"{where}: file is not listed in packages.yaml")
            continue
        if ns.reason not in NOT_A_SITE_REASONS:
            problems.append(f"{where}: reason {ns.reason!r} is not one of {sorted(NOT_A_SITE_REASONS)}")
        lines = texts.get(ns.file)
        if lines is not None and not 1 <= ns.line <= len(lines):
            problems.append(f"{where}: line out of range")
        elif lines is not None and not pattern.search(lines[ns.line - 1]):
            problems.append(f"{where}: not-a-site entry on a line without a grep hit")
        if (ns.file, ns.line) in covered:
            problems.append(f"{where}: both a site and not a site")
        if (ns.file, ns.line) in not_lines:
            problems.append(f"{where}: adjudicated twice")
        not_lines.add((ns.file, ns.line))
    for rel, lines in texts.items():
        for n in sorted(grep_lines("\n".join(lines), pattern)):
            if (rel, n) not in covered and (rel, n) not in not_lines:
                problems.append(f"{ann.package}: {rel}:{n}: grep hit not adjudicated: {lines[n - 1].strip()[:100]}")
    return problems


@dataclass
class Score:
    """Precision over reported lines, recall over required sites; `per_category` by site category
    (recall) and by the reported line's category (precision)."""

    reported: int = 0
    true_reported: int = 0
    required: int = 0
    found_required: int = 0
    missed: list[Site] = field(default_factory=list)
    unmatched: list[tuple[str, str, int, str]] = field(default_factory=list)  # package, file, line, label
    per_category: dict[str, list[int]] = field(default_factory=lambda: defaultdict(lambda: [0, 0, 0, 0]))

    @property
    def precision(self) -> float:
        return self.true_reported / self.reported if self.reported else 1.0

    @property
    def recall(self) -> float:
        return self.found_required / self.required if self.required else 1.0


def score(sites_by_file: Mapping[tuple[str, str], list[Site]],
          reported: Mapping[tuple[str, str], Mapping[int, str]]) -> Score:
    """Match reported lines to sites, per (package, file).

    `reported[(package, file)]` maps each reported line to a category label (the finding's
    category, or "grep"). A site is found when its own line is reported, or else when one of its
    `also` lines is reported and that line is not itself some site's own line. A reported line is
    true when it is a site's line or `also` line (required or optional); any other reported line,
    including one adjudicated not-a-site, is a false positive.
    """
    result = Score()
    keys = set(sites_by_file) | set(reported)
    for key in sorted(keys):
        sites = sites_by_file.get(key, [])
        lines = reported.get(key, {})
        own = {s.line for s in sites}
        covered = own | {n for s in sites for n in s.also}
        for n, label in sorted(lines.items()):
            result.reported += 1
            cat = result.per_category[label]
            cat[0] += 1
            if n in covered:
                result.true_reported += 1
                cat[1] += 1
            else:
                result.unmatched.append((key[0], key[1], n, label))
        for s in sites:
            if not s.required:
                continue
            result.required += 1
            cat = result.per_category[s.category]
            cat[2] += 1
            found = s.line in lines or any(n in lines and n not in own for n in s.also)
            if found:
                result.found_required += 1
                cat[3] += 1
            else:
                result.missed.append(s)
    return result
