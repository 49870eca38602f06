"""Text pieces shared by the Markdown and HTML renderings of a migration record (pure, no markup)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from neuron_migrate.record.build import check_extras, fallback_ops, recompile_sites


def pct(share: float) -> str:
    return f"{share:.0%}"


def yes_no(value: bool) -> str:
    return "yes" if value else "no"


def title(record: Mapping[str, Any]) -> str:
    return f"Migration record: {record['project']['name']}"


def provenance(record: Mapping[str, Any]) -> list[tuple[str, str]]:
    v = record["versions"]
    pack = v["rule_pack"]
    return [
        ("Project", record["project"]["path"]),
        ("Created (UTC)", record["created"]),
        ("Target", record["target"] + (" (unsafe fixes applied)" if record.get("unsafe_fixes") else " (safe fixes only)")),
        ("neuron-migrate", v["tool"]),
        ("Rule pack", (f"{pack['name']} {pack['version']} (Neuron SDK {pack['neuron_sdk']}, "
                       f"torch-neuronx {pack['torch_neuronx']}; digest {pack['digest'][:12]})")),
        ("torch", v["torch"] or "not installed"),
        ("Python", v["python"]),
    ]


def headline_rows(record: Mapping[str, Any]) -> list[tuple[str, str]]:
    h = record["headline"]
    rows = [
        ("CUDA-specific sites found",
         f"{h['sites']} ({h['errors']} errors) in {h['files_with_findings']} of {h['files_scanned']} files"),
        (f"Auto-fixable for target {record['target']}",
         (f"{h['auto_fixable']} of {h['sites']} ({pct(h['auto_fixable_share'])}): "
          f"{h['auto_fixable_safe']} safe, {h['auto_fixable'] - h['auto_fixable_safe']} unsafe")),
        ("Fixed by the rewrite", str(h["fixed_by_rewrite"])),
        ("Left for a person (after rewrite)", str(h["needs_person"])),
        ("Rewrite idempotent (second run changes nothing)", yes_no(h["rewrite_idempotent"])),
    ]
    if h.get("checked"):
        check = record["check"]
        state = "completed" if h["check_completed"] else "did not complete"
        rows += [
            ("check of the rewritten program",
             f"{state} (exit {check['exit_code']}) in {check['duration_s']:.1f} s"),
            ("CPU fallback ops", str(h["fallback_ops"])),
            ("Recompile hotspots (call sites)", str(h["recompile_hotspots"])),
            ("Host synchronisations", str(h["host_syncs"])),
        ]
    else:
        rows.append(("check of the rewritten program", "not run (use --run SCRIPT)"))
    return rows


def fallback_rows(record: Mapping[str, Any]) -> list[tuple[str, str, str]]:
    return [(op, str(e["count"]), ", ".join(e["sites"])) for op, e in fallback_ops(record).items()]


def _varying(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, Mapping):
        return "; ".join(f"{k}: {_varying(v)}" for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return ", ".join(_varying(v) for v in value)
    return str(value)


def recompile_rows(record: Mapping[str, Any]) -> list[tuple[str, str, str, str]]:
    rows = [(s["location"], s["symbol"], str(s["signatures"]), _varying(s["varying"]))
            for s in recompile_sites(record).values()]  # symbol: the call site's source line
    return sorted(rows, key=lambda r: (-int(r[2]), r[0]))


def run_summary_rows(record: Mapping[str, Any]) -> list[tuple[str, str]]:
    """Scalar facts of check's report extras (ops on device vs CPU, compiles, wall time...)."""
    rows: list[tuple[str, str]] = []

    def walk(prefix: str, value: Any) -> None:
        if isinstance(value, Mapping):
            for k, v in value.items():
                walk(f"{prefix}.{k}" if prefix else str(k), v)
        elif isinstance(value, (str, int, float, bool)) or value is None:
            rows.append((prefix, "" if value is None else str(value)))

    for key, value in check_extras(record).items():
        if isinstance(value, (Mapping, str, int, float, bool)):
            walk(str(key), value)
    return rows


def commands(record: Mapping[str, Any]) -> list[tuple[str, str]]:
    return [(k, v) for k, v in record["commands"].items() if v]
