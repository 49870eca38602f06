"""`match.methods` and `match.attributes`: `x.<name>(...)` calls and `x.<name>` reads on a
receiver that is not a module (`model.cuda()`, `x.is_cuda`; never `torch.cuda`)."""

from __future__ import annotations

from collections.abc import Sequence

from neuron_migrate.ruleset.model import Rule


def name_table(rules: Sequence[Rule], field: str) -> dict[str, tuple[Rule, ...]]:
    table: dict[str, list[Rule]] = {}
    for rule in rules:
        for name in getattr(rule.match, field):
            table.setdefault(name, []).append(rule)
    return {k: tuple(v) for k, v in table.items()}
