"""What a scan produces, importable without the engine (the pipeline, cache and tests use it)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from neuron_migrate.findings import Finding


@dataclass(frozen=True, slots=True)
class Directive:
    """One `# neuron-migrate: ignore[...]` comment; `codes` is None for a bare `ignore`. A
    malformed one (`ignore[NM101` without `]`, `ignore[]`) has no codes, silences nothing and
    says what is wrong in `problem`."""

    line: int
    codes: tuple[str, ...] | None
    cell: int | None = None
    problem: str | None = None


class FileResult:
    """Raw findings (before selection, suppression and baseline) and the directives of one file.

    `FileResult(path, findings, directives)`; the engine may instead hand over findings as rows
    (see `scan.rows`) that become `Finding` objects on first access, so that a cached scan of a
    large tree does not build objects nobody reads.
    """

    __slots__ = ("path", "directives", "_findings", "_rows")

    def __init__(self, path: str, findings: list[Finding], directives: list[Directive]) -> None:
        self.path = path  # POSIX path relative to ScanResult.root
        self.directives = directives
        self._findings: list[Finding] | None = findings
        self._rows: Sequence[Any] = ()

    @classmethod
    def from_rows(cls, path: str, rows: Sequence[Any], directives: list[Directive]) -> FileResult:
        result = cls(path, [], directives)
        if rows:
            result._findings, result._rows = None, rows
        return result

    @property
    def findings(self) -> list[Finding]:
        if self._findings is None:
            from neuron_migrate.scan.rows import row_to_finding

            self._findings = [row_to_finding(row, self.path) for row in self._rows]
            self._rows = ()
        return self._findings

    @property
    def finding_count(self) -> int:
        return len(self._findings) if self._findings is not None else len(self._rows)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, FileResult):
            return NotImplemented
        return (self.path, self.findings, self.directives) == (other.path, other.findings, other.directives)

    def __repr__(self) -> str:
        return f"FileResult({self.path!r}, {self.finding_count} findings, {len(self.directives)} directives)"


@dataclass(slots=True)
class ScanResult:
    root: str  # absolute path of the directory finding paths are relative to
    files: list[FileResult]  # every scanned file, sorted by path
    files_scanned: int
    duration_s: float
    # Problems with the tool's own state that the user should see but that change no result
    # (an unreadable or corrupt cache that was rebuilt, a cache that could not be written).
    warnings: list[str] = field(default_factory=list)

    @property
    def findings(self) -> list[Finding]:
        return [f for fr in self.files for f in fr.findings]
