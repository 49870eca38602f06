"""`check --parity`: does the program still compute the same thing on the device?

The program runs twice: on the emulated device with the device's numerics (what the emulator
does on Trainium: 64-bit work narrowed to 32 bits, autocast to bfloat16), and as a CPU reference
(the same program and device name, CPU-exact: no narrowing, `torch.autocast('neuron')` off). Each
run's child record keeps, in order, the values the program read back to the host (check.probe.reads:
`.item()`, `.tolist()`, `float(t)`, `int(t)`, a one-element `.cpu()`). They are compared read by
read: the first value beyond tolerance (|device - reference| > atol + rtol * |reference|) is an
NM915 finding at the user line that read it; a read at another line than the reference's at the
same position means the runs took different paths from there (also NM915). Lines that read
non-deterministic values (sampling, timings) are excluded with `--parity-exclude FILE:LINE`.

`summarize` turns a run's values into per-line series (reads, first and last value), kept in the
report (`extras.check.values`) and so in the migration record, where `diff` shows values that moved.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from typing import Any

from neuron_migrate.check.records import Records
from neuron_migrate.check.run_record import Read

# The emulator's numerics switches (the backend's 64-bit narrowing, neuron_emu.narrowing) and the
# child's reference mode (autocast on `neuron` off).
NUMERICS_ENV = "NEURON_EMU_NUMERICS"
NARROW_ENV = "NEURON_MIGRATE_NARROW_64BIT"
REFERENCE_ENV = "NEURON_MIGRATE_PARITY_REFERENCE"
DEFAULT_RTOL = 1e-3
DEFAULT_ATOL = 1e-5
MAX_SERIES = 200  # lines kept in the report's value series


def device_env() -> dict[str, str]:
    return {NUMERICS_ENV: "device", NARROW_ENV: "1"}


def reference_env() -> dict[str, str]:
    return {NUMERICS_ENV: "exact", NARROW_ENV: "0", REFERENCE_ENV: "1"}


@dataclass(frozen=True, slots=True)
class Exclusion:
    file: str | None  # None: this line in any file
    line: int

    @staticmethod
    def parse(text: str) -> Exclusion:
        from neuron_migrate.errors import NeuronMigrateError

        file, _, line = text.rpartition(":")
        if not line.isdigit() or int(line) < 1:
            raise NeuronMigrateError(f"--parity-exclude {text!r}: expected FILE:LINE or LINE")
        return Exclusion(file or None, int(line))

    def matches(self, file: str, line: int) -> bool:
        if line != self.line:
            return False
        if self.file is None:
            return True
        return os.path.abspath(file) == os.path.abspath(self.file) or file.endswith(os.sep + self.file) \
            or os.path.basename(file) == self.file


def reads_by_rank(records: Records) -> dict[int | None, list[Read]]:
    out: dict[int | None, list[Read]] = {}
    for c in records.child:
        if c.values is not None:
            out.setdefault(c.rank, []).extend(c.values)
    return out


def _number(v: Any) -> float | None:
    if isinstance(v, bool):
        return float(v)
    if isinstance(v, (int, float)):
        return float(v)
    if isinstance(v, str):  # "nan", "inf", "-inf" as the child writes them
        try:
            return float(v)
        except ValueError:
            return None
    return None


def _site(file: str, line: int) -> dict[str, Any]:
    return {"file": file, "line": line, "function": "", "autograd_node": None}


def compare(device: Records, reference: Records, *, rtol: float, atol: float,
            exclude: tuple[Exclusion, ...] = ()) -> dict[str, Any]:
    """The comparison summary; `first_divergence` is None when every value is within tolerance."""
    dev, ref = reads_by_rank(device), reads_by_rank(reference)
    compared = reads = 0
    max_rel = max_abs = 0.0
    first: dict[str, Any] | None = None
    per_line: dict[tuple[str, int], dict[str, Any]] = {}
    for rank in sorted(set(dev) | set(ref), key=lambda r: (r is None, r or 0)):
        a = [r for r in dev.get(rank, []) if not any(e.matches(r[0], r[1]) for e in exclude)]
        b = [r for r in ref.get(rank, []) if not any(e.matches(r[0], r[1]) for e in exclude)]
        for i, (ra, rb) in enumerate(zip(a, b, strict=False)):
            if (ra[0], ra[1]) != (rb[0], rb[1]) or len(ra[3]) != len(rb[3]):
                first = first or {"kind": "path", "rank": rank, "read": i, "site": _site(ra[0], ra[1]),
                                  "reference_site": _site(rb[0], rb[1])}
                break
            reads += 1
            line = per_line.setdefault((ra[0], ra[1]), {"compared": 0, "max_rel_diff": 0.0})
            for x, y in zip(ra[3], rb[3], strict=True):
                fx, fy = _number(x), _number(y)
                if fx is None or fy is None:
                    continue
                compared += 1
                line["compared"] += 1
                if math.isnan(fx) and math.isnan(fy) or fx == fy:
                    continue
                diff = abs(fx - fy) if math.isfinite(fx) and math.isfinite(fy) else math.inf
                rel = diff / abs(fy) if fy else (math.inf if diff else 0.0)
                max_abs, max_rel = max(max_abs, diff), max(max_rel, rel)
                line["max_rel_diff"] = max(line["max_rel_diff"], rel)
                if first is None and not diff <= atol + rtol * abs(fy):
                    first = {"kind": "value", "rank": rank, "read": i, "site": _site(ra[0], ra[1]),
                             "device": x, "reference": y, "abs_diff": _finite(diff), "rel_diff": _finite(rel),
                             "read_kind": ra[2], "line_read": sum(1 for r in a[:i] if r[:2] == ra[:2]) + 1}
        else:
            if len(a) != len(b) and first is None:
                longer = a if len(a) > len(b) else b
                extra = longer[min(len(a), len(b))]
                first = {"kind": "count", "rank": rank, "read": min(len(a), len(b)), "site": _site(extra[0], extra[1]),
                         "device_reads": len(a), "reference_reads": len(b)}
    return {
        "compared": compared, "reads": reads, "max_rel_diff": _finite(max_rel), "max_abs_diff": _finite(max_abs),
        "rtol": rtol, "atol": atol, "excluded": [f"{e.file}:{e.line}" if e.file else str(e.line) for e in exclude],
        "first_divergence": first,
        "lines": [{"site": _site(*k), **v, "max_rel_diff": _finite(v["max_rel_diff"])}
                  for k, v in list(per_line.items())[:MAX_SERIES]],
        "reference_ok": bool(ref),
    }


def _finite(x: float) -> float | str:
    return x if math.isfinite(x) else repr(x)


def summarize(records: Records, relative: Any) -> dict[str, Any]:
    """Per user line, the values it read (first rank): reads, first and last value; `relative`
    maps a file to its report path."""
    series: dict[str, dict[str, Any]] = {}
    runs = reads_by_rank(records)
    if not runs:
        return {}
    rank = sorted(runs, key=lambda r: (r is None, r or 0))[0]
    for file, line, _kind, numbers in runs[rank]:
        key = f"{relative(file)}:{line}"
        if key not in series and len(series) >= MAX_SERIES:
            continue
        entry = series.setdefault(key, {"reads": 0, "first": None, "last": None})
        entry["reads"] += 1
        value = numbers[0] if len(numbers) == 1 else (numbers[:8] if numbers else None)
        if entry["first"] is None:
            entry["first"] = value
        entry["last"] = value
    return series
