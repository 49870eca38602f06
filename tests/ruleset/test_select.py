"""`--select` / `--ignore` expansion: codes, prefixes, ALL, redirects, errors."""

from __future__ import annotations

from dataclasses import replace

import pytest

from neuron_migrate.errors import NeuronMigrateError
from neuron_migrate.ruleset.load import load_pack
from neuron_migrate.ruleset.select import select_codes

PACK = load_pack()


def test_empty_select_means_the_default_selection():
    assert select_codes(PACK) == {c for c, r in PACK.rules.items() if r.default}
    assert select_codes(PACK, ["all"]) == set(PACK.rules)


def test_int64_hazard_is_off_by_default_but_selectable():
    # NM803 fired on ordinary index code (`torch.arange(..., dtype=torch.long)`) that TorchNeuron
    # narrows itself; float64 (NM801) and channels_last (NM804) hazards stay on.
    assert "NM803" not in select_codes(PACK)
    assert {"NM801", "NM804"} <= select_codes(PACK)
    assert "NM803" in select_codes(PACK, ["NM803"])
    assert "NM803" in select_codes(PACK, ["NM8"])


@pytest.mark.parametrize("prefix", ["NM1", "NM20", "NM206", "nm5"])
def test_prefixes_select_codes_that_start_with_them(prefix):
    assert select_codes(PACK, [prefix]) == {c for c in PACK.rules if c.startswith(prefix.upper())}


def test_ignore_is_applied_after_select():
    assert select_codes(PACK, ["NM2"], ["NM20", "NM299"]) == {
        c for c in PACK.rules if c.startswith("NM2") and not c.startswith("NM20") and c != "NM299"}
    assert "NM101" not in select_codes(PACK, (), ["NM101"])


def test_redirected_code_selects_its_new_code():
    pack = replace(PACK, redirects={"NM199": "NM101"})
    assert select_codes(pack, ["NM199"]) == {"NM101"}
    assert "NM101" not in select_codes(pack, (), ["NM199"])


@pytest.mark.parametrize("bad", ["NM999", "NM88", "XX1", "NM1x", ""])
def test_unknown_or_malformed_selector_is_an_error(bad):
    with pytest.raises(NeuronMigrateError):
        select_codes(PACK, [bad])
