"""A rule's `fix.queries`: a match given to a call that asks about it keeps its finding, not its fix."""

from __future__ import annotations

import textwrap

from neuron_migrate.findings import Target
from neuron_migrate.ruleset.load import load_pack
from neuron_migrate.scan.analyze import analyze_source

PACK = load_pack()


def _nm804(code: str) -> dict[int, bool]:
    """Per line of an NM804 finding, whether it carries a `neuron` fix."""
    found = analyze_source(textwrap.dedent(code), "q.py", PACK)
    return {f.span.line: f.fix_for(Target.NEURON) is not None for f in found if f.code == "NM804"}


def test_is_contiguous_asks_so_its_argument_keeps_no_fix() -> None:
    assert PACK.rules["NM804"].fix.queries == ("is_contiguous",)
    code = """\
        import torch

        def prepare(x, m):
            if x.is_contiguous(memory_format=torch.channels_last):
                return x
            if not x.is_contiguous(torch.channels_last_3d):
                pass
            return m.to(memory_format=torch.channels_last)
        """
    assert _nm804(code) == {4: False, 6: False, 8: True}


def test_a_value_computed_inside_the_query_call_is_still_fixed() -> None:
    code = """\
        import torch

        def f(x, pick):
            return x.is_contiguous(memory_format=pick(torch.channels_last))
        """
    assert _nm804(code) == {4: True}
