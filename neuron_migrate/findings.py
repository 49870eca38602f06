"""The one findings model shared by scan, rewrite, check, baselines, emitters and records.

Positions: `line`/`end_line` are 1-based, `col`/`end_col` are 0-based *character* offsets into the
line (stdlib `ast` gives UTF-8 byte offsets; scan converts them once, when it builds a `Span`).
For a notebook, `cell` is the 0-based index among *all* cells (JSON `cell`, SARIF `properties.cell`)
and lines count from the cell's first line. Text for people numbers cells from 1, as notebook
editors do: the first cell's finding is `path:cell[1]:line:col` (`Finding.location()`).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any

FINDINGS_SCHEMA_VERSION = 1


class Severity(StrEnum):
    ERROR = "error"
    WARNING = "warning"
    INFO = "info"

    @property
    def rank(self) -> int:
        return {"info": 0, "warning": 1, "error": 2}[self.value]


class FixClass(StrEnum):
    SAFE = "safe"  # applied by `rewrite --apply`
    UNSAFE = "unsafe"  # may change behaviour: needs `--unsafe-fixes`
    MANUAL = "manual"  # a person must do it; guidance only
    NONE = "none"  # no Neuron equivalent exists


class Target(StrEnum):
    NEURON = "neuron"  # write Neuron code (`'neuron'`, `torch.neuron.*`)
    ACCELERATOR = "accelerator"  # write device-agnostic `torch.accelerator` code


def cell_label(cell: int | None) -> str:
    """`cell[N]:` for people (N counts from 1, as notebook editors show cells); "" outside notebooks."""
    return f"cell[{cell + 1}]:" if cell is not None else ""


@dataclass(frozen=True, slots=True, order=True)
class Span:
    line: int
    col: int
    end_line: int
    end_col: int

    def contains(self, inner: Span) -> bool:
        return ((self.line, self.col) <= (inner.line, inner.col)
                and (inner.end_line, inner.end_col) <= (self.end_line, self.end_col))

    def to_dict(self) -> dict[str, int]:
        return {"line": self.line, "col": self.col, "end_line": self.end_line, "end_col": self.end_col}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Span:
        return cls(int(d["line"]), int(d["col"]), int(d["end_line"]), int(d["end_col"]))


@dataclass(frozen=True, slots=True)
class Edit:
    """Replace the text at `span` (same coordinates as the finding) with `replacement`."""

    span: Span
    replacement: str

    def to_dict(self) -> dict[str, Any]:
        return {"span": self.span.to_dict(), "replacement": self.replacement}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Edit:
        return cls(Span.from_dict(d["span"]), str(d["replacement"]))


@dataclass(frozen=True, slots=True)
class Fix:
    """How to fix one finding for one rewrite target.

    `add_imports` are statements the edited code needs (`import torch`); `remove_imports` are
    `module.name` / `module` imports that may have become unused (removed only if unused).
    """

    target: Target
    applicability: FixClass
    title: str
    edits: tuple[Edit, ...]
    add_imports: tuple[str, ...] = ()
    remove_imports: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "target": self.target.value,
            "applicability": self.applicability.value,
            "title": self.title,
            "edits": [e.to_dict() for e in self.edits],
            "add_imports": list(self.add_imports),
            "remove_imports": list(self.remove_imports),
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Fix:
        return cls(
            Target(d["target"]),
            FixClass(d["applicability"]),
            str(d["title"]),
            tuple(Edit.from_dict(e) for e in d["edits"]),
            tuple(d.get("add_imports", ())),
            tuple(d.get("remove_imports", ())),
        )


_WS = re.compile(r"\s+")


def fingerprint(code: str, path: str, symbol: str, source_line: str) -> str:
    """Content fingerprint for baselines: stable when lines move, changes when the code does."""
    normalised = _WS.sub(" ", source_line).strip()
    digest = hashlib.sha256("\x1f".join((code, path, symbol, normalised)).encode("utf-8"))
    return digest.hexdigest()[:20]


@dataclass(frozen=True, slots=True)
class Finding:
    code: str
    severity: Severity
    fix_class: FixClass
    category: str
    path: str  # POSIX path relative to the scan root (as given, for single files)
    span: Span
    message: str
    source_line: str = ""  # the physical source line at span.line, without its newline
    symbol: str = ""  # what matched: qualified name, literal, env var, op name...
    fixes: tuple[Fix, ...] = ()
    cell: int | None = None  # notebook cell index
    statement_line: int = 0  # first line of the enclosing statement (for suppressions); 0 = span.line
    details: Mapping[str, Any] = field(default_factory=dict)  # kind-specific data (NM9xx runtime)
    fingerprint: str = ""

    def __post_init__(self) -> None:
        if not self.fingerprint:
            object.__setattr__(
                self, "fingerprint", fingerprint(self.code, self.path, self.symbol, self.source_line)
            )

    @property
    def sort_key(self) -> tuple[str, int, int, int, str]:
        return (self.path, self.cell if self.cell is not None else -1, self.span.line, self.span.col, self.code)

    def fix_for(self, target: Target) -> Fix | None:
        return next((f for f in self.fixes if f.target == target), None)

    def with_severity(self, severity: Severity) -> Finding:
        return replace(self, severity=severity)

    def location(self) -> str:
        return f"{self.path}:{cell_label(self.cell)}{self.span.line}:{self.span.col + 1}"

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "code": self.code,
            "severity": self.severity.value,
            "fix_class": self.fix_class.value,
            "category": self.category,
            "path": self.path,
            "cell": self.cell,
            "span": self.span.to_dict(),
            "message": self.message,
            "source_line": self.source_line,
            "symbol": self.symbol,
            "statement_line": self.statement_line,
            "fixes": [f.to_dict() for f in self.fixes],
            "fingerprint": self.fingerprint,
        }
        if self.details:
            d["details"] = dict(self.details)
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Finding:
        return cls(
            code=str(d["code"]),
            severity=Severity(d["severity"]),
            fix_class=FixClass(d["fix_class"]),
            category=str(d["category"]),
            path=str(d["path"]),
            span=Span.from_dict(d["span"]),
            message=str(d["message"]),
            source_line=str(d.get("source_line", "")),
            symbol=str(d.get("symbol", "")),
            fixes=tuple(Fix.from_dict(f) for f in d.get("fixes", ())),
            cell=None if d.get("cell") is None else int(d["cell"]),
            statement_line=int(d.get("statement_line", 0)),
            details=dict(d.get("details", {})),
            fingerprint=str(d.get("fingerprint", "")),
        )


# Report.extras keys the pipeline and check fill in, and emitters read.
EXTRA_BASELINE = "baseline"  # {"path", "matched", "fixed": [{fingerprint, code, path, symbol, count}]}
EXTRA_SUPPRESSED = "suppressed"  # number of findings silenced by inline comments
EXTRA_DIFF = "diff"  # {"against": rev, "outside": findings dropped as not on changed lines}
EXTRA_CHECK = "check"  # the run summary of check (neuron_migrate.check.analyze)


@dataclass(frozen=True, slots=True)
class Report:
    """What one command produced: the input of every emitter and of the gate."""

    command: str  # "scan", "rewrite", "check"
    root: str
    findings: tuple[Finding, ...]
    files_scanned: int = 0
    duration_s: float = 0.0
    tool_version: str = ""
    pack_version: str = ""
    # Free-form, command-specific extras (rewrite: changed files; check: run summary; baseline: fixed).
    extras: Mapping[str, Any] = field(default_factory=dict)
    # Notes about the run that are not findings (an unreadable ignore file): shown, never serialised.
    warnings: tuple[str, ...] = ()

    def sorted(self) -> Report:
        return replace(self, findings=tuple(sorted(self.findings, key=lambda f: f.sort_key)))

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema_version": FINDINGS_SCHEMA_VERSION,
            "command": self.command,
            "root": self.root,
            "tool_version": self.tool_version,
            "pack_version": self.pack_version,
            "files_scanned": self.files_scanned,
            "duration_s": round(self.duration_s, 3),
            "findings": [f.to_dict() for f in self.findings],
            "extras": dict(self.extras),
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Report:
        return cls(
            command=str(d["command"]),
            root=str(d["root"]),
            findings=tuple(Finding.from_dict(f) for f in d["findings"]),
            files_scanned=int(d.get("files_scanned", 0)),
            duration_s=float(d.get("duration_s", 0.0)),
            tool_version=str(d.get("tool_version", "")),
            pack_version=str(d.get("pack_version", "")),
            extras=dict(d.get("extras", {})),
        )
