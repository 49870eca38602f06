"""`--select` / `--ignore` expansion: codes, prefixes, ALL, redirects, errors."""

from __future__ import annotations

from dataclasses import replace

import pytest

from neuron_migrate.errors import NeuronMigrateError
from neuron_migrate.ruleset.load import load_pack
from neuron_migrate.ruleset.select import select_codes

PACK = load_pack()


def test_empty_select_means_all():
    assert select_codes(PACK) == set(PACK.rules)
    assert select_codes(PACK, ["all"]) == set(PACK.rules)


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
