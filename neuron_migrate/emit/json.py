"""`--format json`: the report as versioned JSON (schema: `neuron_migrate/emit/report.schema.json`).

Lossless: every fix for every target is kept, so `Report.from_dict` reads the output back.
`schema_version` changes only when a field changes meaning or is removed; new fields may appear.
"""

from __future__ import annotations

import json

from neuron_migrate.emit.options import EmitOptions
from neuron_migrate.emit.summary import summarize
from neuron_migrate.findings import Report


def emit(report: Report, options: EmitOptions) -> str:
    data = report.to_dict()
    data["target"] = options.target.value
    data["summary"] = summarize(report, options.target, options.top_files).to_dict()
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"
