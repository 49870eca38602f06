"""Turn `--select` / `--ignore` lists (codes, prefixes such as `NM1` or `NM10`, or `ALL`) into codes."""

from __future__ import annotations

import re
from collections.abc import Iterable

from neuron_migrate.errors import NeuronMigrateError
from neuron_migrate.ruleset.model import RulePack

_SELECTOR_RE = re.compile(r"^NM\d{0,3}$")


def expand(pack: RulePack, selector: str) -> set[str]:
    """The live codes one selector names; a redirected old code names its new code."""
    sel = selector.strip().upper()
    if sel == "ALL":
        return set(pack.rules)
    if not _SELECTOR_RE.match(sel):
        raise NeuronMigrateError(f"invalid rule selector {selector!r}: use a code (NM101), a prefix (NM1, NM10) or ALL")
    if sel in pack.redirects:
        return {pack.redirects[sel]}
    codes = {code for code in pack.rules if code.startswith(sel)}
    if not codes:
        raise NeuronMigrateError(f"rule selector {selector!r} matches no rule (see `neuron-migrate rules`)")
    return codes


def select_codes(pack: RulePack, select: Iterable[str] = (), ignore: Iterable[str] = ()) -> set[str]:
    """Codes enabled by `select` (when empty: every rule in the default selection) minus those
    named by `ignore`. A rule outside the default selection is enabled only by a selector."""
    select = list(select)
    enabled: set[str] = set()
    if not select:
        enabled = {code for code, rule in pack.rules.items() if rule.default}
    for selector in select:
        enabled |= expand(pack, selector)
    for selector in ignore:
        enabled -= expand(pack, selector)
    return enabled
