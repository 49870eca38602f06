"""Baselines: record today's findings, then report and fail only on new ones.

Entries are keyed by `Finding.fingerprint` (rule + path + matched symbol + normalised source line,
never a line number), so moving code around a file keeps the baseline valid; the file is a
multiset (fingerprint -> count) because the same line can legitimately repeat. `code`, `path` and
`symbol` are stored only so that people can read and review the file.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from neuron_migrate.errors import ConfigError
from neuron_migrate.findings import Finding

BASELINE_FORMAT = "neuron-migrate-baseline"
BASELINE_VERSION = 1


@dataclass(frozen=True, slots=True)
class Entry:
    fingerprint: str
    code: str
    path: str
    symbol: str
    count: int

    def to_dict(self) -> dict[str, Any]:
        return {"fingerprint": self.fingerprint, "code": self.code, "path": self.path,
                "symbol": self.symbol, "count": self.count}


@dataclass(frozen=True, slots=True)
class Baseline:
    entries: tuple[Entry, ...]


@dataclass(frozen=True, slots=True)
class Applied:
    new: list[Finding]  # not in the baseline: reported and gated
    matched: int  # findings the baseline already records
    fixed: list[Entry]  # baseline entries (with the missing count) no longer found


def from_findings(findings: Iterable[Finding]) -> Baseline:
    counts: Counter[str] = Counter()
    first: dict[str, Finding] = {}
    for f in findings:
        counts[f.fingerprint] += 1
        first.setdefault(f.fingerprint, f)
    entries = (Entry(fp, first[fp].code, first[fp].path, first[fp].symbol, n) for fp, n in counts.items())
    return Baseline(tuple(sorted(entries, key=lambda e: (e.path, e.code, e.symbol, e.fingerprint))))


def dumps(baseline: Baseline, tool_version: str = "") -> str:
    data = {
        "format": BASELINE_FORMAT,
        "version": BASELINE_VERSION,
        "tool_version": tool_version,
        "entries": [e.to_dict() for e in baseline.entries],
    }
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


MAX_COUNT = 1 << 31  # more findings than any tree holds: a typo or a hostile file


def _entry(path: Path, i: int, raw: Any) -> Entry:
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: baseline entry {i} is malformed (expected an object, got {type(raw).__name__})")
    fields: dict[str, str] = {}
    for key in ("fingerprint", "code", "path", "symbol"):
        value = raw.get(key, "" if key == "symbol" else None)
        if not isinstance(value, str):
            got = "missing" if value is None else f"{type(value).__name__} {value!r}"
            raise ConfigError(f"{path}: baseline entry {i}: \"{key}\" must be a string ({got})")
        fields[key] = value
    count = raw.get("count", 1)
    if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= MAX_COUNT:
        raise ConfigError(f"{path}: baseline entry {i}: \"count\" must be a whole number from 1 to {MAX_COUNT}, "
                          f"got {count!r}")
    return Entry(fields["fingerprint"], fields["code"], fields["path"], fields["symbol"], count)


def load(path: Path) -> Baseline:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"{path}: baseline file not found (create it with --write-baseline)") from None
    except (OSError, UnicodeDecodeError) as e:
        raise ConfigError(f"{path}: cannot read baseline: {e}") from None
    except json.JSONDecodeError as e:
        raise ConfigError(f"{path}: baseline is not valid JSON: {e}") from None
    except RecursionError:
        raise ConfigError(f"{path}: baseline is not valid JSON: nested too deeply") from None
    if not isinstance(data, dict) or data.get("format") != BASELINE_FORMAT:
        raise ConfigError(f"{path}: not a neuron-migrate baseline (missing \"format\": \"{BASELINE_FORMAT}\")")
    if data.get("version") != BASELINE_VERSION:
        raise ConfigError(f"{path}: baseline version {data.get('version')!r} is not supported "
                          f"(expected {BASELINE_VERSION}); rewrite it with --write-baseline")
    raw_entries = data.get("entries")
    if not isinstance(raw_entries, list):
        raise ConfigError(f"{path}: baseline \"entries\" must be a list")
    return Baseline(tuple(_entry(path, i, raw) for i, raw in enumerate(raw_entries)))


def apply(baseline: Baseline, findings: Sequence[Finding]) -> Applied:
    """Split findings into new ones and ones the baseline records; list what has been fixed."""
    remaining: Counter[str] = Counter()
    for e in baseline.entries:  # a hand-merged file may repeat a fingerprint: add the counts
        remaining[e.fingerprint] += e.count
    new: list[Finding] = []
    matched = 0
    for f in findings:
        if remaining[f.fingerprint] > 0:
            remaining[f.fingerprint] -= 1
            matched += 1
        else:
            new.append(f)
    fixed: list[Entry] = []
    seen: set[str] = set()
    for e in baseline.entries:
        if remaining[e.fingerprint] > 0 and e.fingerprint not in seen:
            seen.add(e.fingerprint)
            fixed.append(Entry(e.fingerprint, e.code, e.path, e.symbol, remaining[e.fingerprint]))
    return Applied(new, matched, fixed)
