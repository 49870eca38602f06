"""Where the rule pack's YAML files are, in a wheel and in a source checkout.

A wheel installs `rules/` as `neuron_migrate/rules/`; an editable install or a plain checkout keeps
it at the repository root beside `neuron_migrate/`. Either way this never imports anything heavy.
"""

from __future__ import annotations

from pathlib import Path

_PACKAGE_DIR = Path(__file__).resolve().parents[1]


def rules_dir() -> Path:
    installed = _PACKAGE_DIR / "rules"
    if (installed / "pack.yaml").is_file():
        return installed
    return _PACKAGE_DIR.parent / "rules"
