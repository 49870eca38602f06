"""Text pieces shared by the Markdown and HTML renderings of a migration record (pure, no markup)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from neuron_migrate.record.build import Headline, check_extras, fallback_ops, recompile_sites


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
    h = Headline.from_dict(record["headline"])
    rows = [
        ("CUDA-specific sites found",
         f"{h.sites} ({h.errors} errors) in {h.files_with_findings} of {h.files_scanned} files"),
        (f"Auto-fixable for target {record['target']}",
         (f"{h.auto_fixable} of {h.sites} ({pct(h.auto_fixable_share)}): "
          f"{h.auto_fixable_safe} safe, {h.auto_fixable - h.auto_fixable_safe} unsafe")),
        ("Fixed by the rewrite", str(h.fixed_by_rewrite)),
        ("Left for a person (after rewrite)", str(h.needs_person)),
        ("Rewrite idempotent (second run changes nothing)", yes_no(h.rewrite_idempotent)),
    ]
    if h.check is not None:
        check = record["check"]
        state = "completed" if h.check.check_completed else "did not complete"
        rows += [
            ("check of the rewritten program",
             f"{state} (exit {check['exit_code']}) in {check['duration_s']:.1f} s"),
            ("CPU fallback ops", str(h.check.fallback_ops)),
            ("Recompile hotspots (call sites)", str(h.check.recompile_hotspots)),
            ("Host synchronisations", str(h.check.host_syncs)),
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


def recompile_rows(record: Mapping[str, Any]) -> list[tuple[str, str, str, str, str]]:
    """(location, source line, signatures, what varied, padding advice), most signatures first."""
    rows = [(s["location"], s["symbol"], str(s["signatures"]), _varying(s["varying"]), "; ".join(s.get("advice", ())))
            for s in recompile_sites(record).values()]  # symbol: the call site's source line
    return sorted(rows, key=lambda r: (-int(r[2]), r[0]))


def balance(found: int, fixed: int, left: int) -> str:
    """Why found != fixed + left for a code, in words ("" when they add up): the rescan of the
    rewritten code sees findings the rewrite introduced, or misses ones it removed without a fix."""
    delta = left - (found - fixed)
    if delta > 0:
        return f"{delta} new after the rewrite"
    if delta < 0:
        return f"{-delta} gone with other edits"
    return ""


# Readable names for check's run-summary keys (`report.extras.check`); others are shown humanised.
_SUMMARY_LABELS = {
    "program": "Program",
    "processes": "Processes",
    "ops.device": "Op calls on the device",
    "ops.cpu_fallback": "Op calls that fell back to the CPU",
    "ops.device_share": "Share of op calls on the device",
    "ops.host_syncs": "Host synchronisations (device values read on the host)",
    "compiles.eager": "Eager graphs compiled",
    "compiles.eager_recompiles": "Eager recompiles",
    "compiles.dynamo_graphs": "torch.compile graphs",
    "compiles.dynamo_graph_breaks": "torch.compile graph breaks",
    "compiles.dynamo_recompiles": "torch.compile recompiles",
    "compiles.dynamo_recompile_limit": "torch.compile recompile limit hits",
    "wall_s": "Wall time (s)",
}
_SUMMARY_GROUPS = {
    "ops.host_compute": "Computed on the host",
    "ops.host_sync_ops": "Host synchronisations by op",
    "narrowed_64bit": "64-bit work narrowed",
}


def _summary_label(key: str) -> str:
    if key in _SUMMARY_LABELS:
        return _SUMMARY_LABELS[key]
    for group, label in _SUMMARY_GROUPS.items():
        if key.startswith(group + "."):
            return f"{label}: {key[len(group) + 1:]}"
    words = key.replace(".", " ").replace("_", " ").strip()
    return words[:1].upper() + words[1:]


def _summary_value(key: str, value: Any) -> str:
    if value is None:
        return ""
    if key.endswith("_share") and isinstance(value, (int, float)) and not isinstance(value, bool):
        return f"{value:.1%}"
    if isinstance(value, bool):
        return yes_no(value)
    return str(value)


def run_summary_rows(record: Mapping[str, Any]) -> list[tuple[str, str]]:
    """Scalar facts of check's report extras (ops on device vs CPU, compiles, wall time...), with
    readable labels and values (shares as percentages)."""
    rows: list[tuple[str, str]] = []

    def walk(prefix: str, value: Any) -> None:
        if isinstance(value, Mapping):
            for k, v in value.items():
                walk(f"{prefix}.{k}" if prefix else str(k), v)
        elif isinstance(value, (str, int, float, bool)) or value is None:
            key = prefix.removeprefix("check.")
            rows.append((_summary_label(key), _summary_value(key, value)))

    for key, value in check_extras(record).items():
        if isinstance(value, (Mapping, str, int, float, bool)):
            walk(str(key), value)
    return rows


def commands(record: Mapping[str, Any]) -> list[tuple[str, str]]:
    return [(k, v) for k, v in record["commands"].items() if v]
