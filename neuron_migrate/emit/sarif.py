"""SARIF 2.1.0 for code-scanning tools (GitHub code scanning, Azure DevOps, IDE viewers).

Columns are 1-based and count Unicode code points (`columnKind`), matching `Span`. Each result
carries our fingerprint in `partialFingerprints` and, when the rule has one, the fix for the chosen
target as `fixes[].artifactChanges` (ruff #19962, semgrep #9072: users want fixes in SARIF).
Code scanning merges results whose fingerprints are equal, and ours is a content hash (two
findings of one rule on one line share it), so each value carries the occurrence index of its hash
within the run, as GitHub's own `primaryLocationLineHash` does (`hash:1`, `hash:2`...).
A rule's `helpUri` is its own section of the rules page when the installed metadata names that page
(`Project-URL: Rules, ...`); the Neuron documentation it cites stays in `help`.
A notebook finding points at the .ipynb file's lines that hold it (`EmitOptions.notebook_lines`),
without columns (the JSON string's quoting shifts them); the cell index and the cell-relative line and
column are in `properties` (`cell`, `cellLine`, `cellColumn`), and no fix is attached (the edits are
not in .ipynb file coordinates). Without the line map the region is cell-relative, as before.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import PurePosixPath
from typing import Any
from urllib.parse import quote

from neuron_migrate.emit.options import EmitOptions
from neuron_migrate.findings import Finding, Fix, Report, Severity, Span
from neuron_migrate.ruleset.model import Rule

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
SRCROOT = "%SRCROOT%"
FINGERPRINT_KEY = "neuronMigrate/v2"  # v2: the value ends in `:<occurrence>`

_LEVEL = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "note"}


def _region(span: Span) -> dict[str, int]:
    return {
        "startLine": span.line,
        "startColumn": span.col + 1,
        "endLine": span.end_line,
        "endColumn": span.end_col + 1,
    }


def _artifact(path: str) -> dict[str, str]:
    return {"uri": quote(path), "uriBaseId": SRCROOT}


def _rule_descriptor(code: str, rule: Rule | None, sample: Finding, rules_uri: str) -> dict[str, Any]:
    if rule is None:  # a code the pack does not know (e.g. a team rule from another pack)
        return {
            "id": code,
            "shortDescription": {"text": code},
            "defaultConfiguration": {"level": _LEVEL[sample.severity]},
            "properties": {"category": sample.category, "fixClass": sample.fix_class.value},
        }
    why = rule.why.strip()
    fix_line = f"Fix class: {rule.fix.fix_class.value}." + (
        f" Safety: {rule.fix.safety.strip()}" if rule.fix.safety else ""
    )
    refs = [f"- {url}" for url in rule.references]
    text = "\n\n".join(p for p in (rule.title, why, fix_line, "\n".join(refs)) if p)
    markdown = "\n\n".join(
        p for p in (f"**{rule.title}**", why, fix_line, "References:\n" + "\n".join(refs) if refs else "") if p
    )
    descriptor: dict[str, Any] = {
        "id": rule.code,
        "name": rule.name,
        "shortDescription": {"text": rule.title},
        "fullDescription": {"text": why or rule.title},
        "help": {"text": text, "markdown": markdown},
        "defaultConfiguration": {"level": _LEVEL[rule.severity]},
        "properties": {
            "category": rule.category,
            "fixClass": rule.fix.fix_class.value,
            "status": rule.status.value,
            "tags": [rule.category, rule.family.prefix + "xx"],
        },
    }
    if rules_uri:
        descriptor["helpUri"] = f"{rules_uri}#{rule.anchor}"
    return descriptor


def _fix(path: str, fix: Fix) -> dict[str, Any]:
    description = fix.title
    if fix.add_imports:
        description += f" (adds {'; '.join(fix.add_imports)})"
    return {
        "description": {"text": description},
        "artifactChanges": [
            {
                "artifactLocation": _artifact(path),
                "replacements": [
                    {"deletedRegion": _region(e.span), "insertedContent": {"text": e.replacement}}
                    for e in fix.edits
                ],
            }
        ],
    }


def _file_region(f: Finding, options: EmitOptions) -> dict[str, int]:
    """The finding's region in its file: a notebook cell's lines mapped to .ipynb lines when known."""
    lines = options.notebook_lines.get(f.path, {}).get(f.cell) if f.cell is not None else None
    if not lines or not 1 <= f.span.line <= len(lines):
        return _region(f.span)
    return {"startLine": lines[f.span.line - 1], "endLine": lines[min(f.span.end_line, len(lines)) - 1]}


def _result(f: Finding, rule_index: int, occurrence: int, options: EmitOptions) -> dict[str, Any]:
    region = _file_region(f, options)
    location: dict[str, Any] = {"artifactLocation": _artifact(f.path), "region": region}
    if f.source_line:
        location["contextRegion"] = {"startLine": region["startLine"], "snippet": {"text": f.source_line}}
    result: dict[str, Any] = {
        "ruleId": f.code,
        "ruleIndex": rule_index,
        "level": _LEVEL[f.severity],
        "message": {"text": f.message},
        "locations": [{"physicalLocation": location}],
        "partialFingerprints": {FINGERPRINT_KEY: f"{f.fingerprint}:{occurrence}"},
    }
    properties: dict[str, Any] = {"fixClass": f.fix_class.value, "category": f.category}
    if f.symbol:
        properties["symbol"] = f.symbol
    if f.cell is not None:
        properties.update(cell=f.cell, cellLine=f.span.line, cellColumn=f.span.col + 1)
    if f.details:
        properties["details"] = dict(f.details)
    result["properties"] = properties
    fix = f.fix_for(options.target)
    if fix is not None and fix.edits and f.cell is None:
        result["fixes"] = [_fix(f.path, fix)]
    return result


def _occurrences(findings: tuple[Finding, ...]) -> list[tuple[Finding, int]]:
    """Each finding with its 1-based index among the findings that share its fingerprint."""
    seen: Counter[str] = Counter()
    out = []
    for f in findings:
        seen[f.fingerprint] += 1
        out.append((f, seen[f.fingerprint]))
    return out


def emit(report: Report, options: EmitOptions) -> str:
    codes = sorted({f.code for f in report.findings})
    samples = {f.code: f for f in reversed(report.findings)}
    index = {code: i for i, code in enumerate(codes)}
    pack = options.pack
    driver: dict[str, Any] = {
        "name": "neuron-migrate",
        "rules": [
            _rule_descriptor(c, pack.get(c) if pack else None, samples[c], options.rules_uri) for c in codes
        ],
    }
    if report.tool_version:
        driver["version"] = driver["semanticVersion"] = report.tool_version
    if options.information_uri:
        driver["informationUri"] = options.information_uri
    if report.pack_version:
        driver["properties"] = {"rulePackVersion": report.pack_version}
    run: dict[str, Any] = {
        "tool": {"driver": driver},
        "columnKind": "unicodeCodePoints",
        "results": [_result(f, index[f.code], n, options) for f, n in _occurrences(report.findings)],
        "invocations": [{"executionSuccessful": True}],
        "properties": {"command": report.command, "filesScanned": report.files_scanned},
    }
    root = PurePosixPath(report.root)
    if root.is_absolute():
        run["originalUriBaseIds"] = {SRCROOT: {"uri": root.as_uri().rstrip("/") + "/"}}
    sarif = {"$schema": SARIF_SCHEMA, "version": "2.1.0", "runs": [run]}
    return json.dumps(sarif, indent=2, ensure_ascii=False) + "\n"
