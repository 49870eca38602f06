"""rules/ops.yaml read as one typed table (neuron_migrate.ruleset.ops), by check and the emulator."""

from __future__ import annotations

from pathlib import Path

import pytest

from neuron_migrate.errors import RulePackError
from neuron_migrate.ruleset.ops import NativeOp, load_ops, ops_path, parse_fast, parse_ops, parse_yaml

# The native kernels whose coverage note says the host reads a device value (hand-checked against
# shared/reference/neuron-op-coverage.yaml): .item(), the data-dependent sizes, histc's auto range.
HOST_SYNCS = {
    "aten::_local_scalar_dense", "aten::histc", "aten::histc.out", "aten::masked_select",
    "aten::masked_select.out", "aten::nonzero", "aten::nonzero.out", "aten::repeat_interleave.Tensor",
}

TABLE = """\
source:
  repo: someone/torch-neuronx
  note: 'a folded
    note, it''s quoted'
dtype_downcast:
  float64: float32
memory_formats:
  allowed:
  - contiguous_format
  message: only contiguous
silent_views:
- aten::view
host_compute:
- name: aten::argsort.stable
  reason: cpp kernel
data_dependent:
  note: output shapes that depend on
    values
  ops:
  - aten::nonzero
  - aten::repeat_interleave.Tensor
native:
- name: aten::add.Tensor
  via: mlir
- name: aten::nonzero
  via:
  - nki
  - mlir
  host_sync: true
  condition: padded, then a host-side slice
- name: aten::histc
  via: cpp
  condition: the host syncs on min/max
"""


def test_the_shipped_table_reads_whole() -> None:
    table = load_ops()
    assert table.dtype_downcast == {"float64": "float32", "int64": "int32"}
    assert table.memory_formats == ("contiguous_format", "preserve_format")
    assert table.memory_format_message == "Neuron tensors only support contiguous or preserve memory format"
    assert "aten::view" in table.silent_views and "aten::native_dropout" in table.host_compute
    assert len(set(table.native_names)) == len(table.native) > 300
    assert table.host_sync_ops == HOST_SYNCS
    assert table.source["repo"] == "parmoham-aws/test-repo-parmoham"
    assert set(table.data_dependent) == {
        "aten::_local_scalar_dense", "aten::nonzero", "aten::masked_select", "aten::unique", "aten::_unique",
        "aten::unique_consecutive", "aten::unique_dim", "aten::repeat_interleave.Tensor", "aten::histc"}
    sdpa = next(op for op in table.native if op.name == "aten::_scaled_dot_product_fused_attention_overrideable")
    assert sdpa.via == ("nki", "mlir")


def test_the_fast_reader_gives_what_pyyaml_gives() -> None:
    # The emulator reads the table while `import torch` activates it: without PyYAML, but the same table.
    text = ops_path().read_text(encoding="utf-8")
    fast = parse_fast(text)
    assert fast is not None, "the shipped table no longer has the generated layout"
    assert fast == parse_yaml(text)
    small = parse_fast(TABLE)
    assert small is not None and small == parse_yaml(TABLE)
    assert small.source["note"] == "a folded note, it's quoted"


def test_host_sync_is_the_tables_field_not_the_condition_text() -> None:
    table = parse_ops(TABLE)
    assert table.native == (
        NativeOp("aten::add.Tensor", ("mlir",), False),
        NativeOp("aten::nonzero", ("nki", "mlir"), True),
        NativeOp("aten::histc", ("cpp",), False),  # its prose says "host syncs"; the data does not
    )
    assert table.host_sync_ops == {"aten::nonzero"}


def test_data_dependent_ops_match_their_overloads_only() -> None:
    table = parse_ops(TABLE)
    assert table.data_dependent == ("aten::nonzero", "aten::repeat_interleave.Tensor")
    assert table.is_data_dependent("aten::nonzero") and table.is_data_dependent("aten::nonzero.out")
    assert table.is_data_dependent("aten::repeat_interleave.Tensor")
    assert not table.is_data_dependent("aten::nonzero_static")  # a fixed output size
    assert not table.is_data_dependent("aten::repeat_interleave.self_int")  # the size is an argument
    shipped = load_ops()
    assert shipped.is_data_dependent("aten::unique_consecutive.default")
    assert not shipped.is_data_dependent("aten::_unique2")


def test_a_table_in_another_layout_is_read_by_pyyaml() -> None:
    flow = "native: [{name: 'aten::nonzero', via: mlir, host_sync: true}]\nsilent_views: [aten::view]\n"
    assert parse_fast(flow) is None
    table = parse_ops(flow)
    assert table.host_sync_ops == {"aten::nonzero"} and table.silent_views == {"aten::view"}


def test_a_broken_table_names_the_file(tmp_path: Path) -> None:
    with pytest.raises(RulePackError, match="ops.yaml"):
        parse_ops("native: [", "ops.yaml")
    with pytest.raises(RulePackError, match="name"):
        parse_ops("native:\n- via: cpp\n", "ops.yaml")
    with pytest.raises(RulePackError, match="expected a list"):
        parse_ops("silent_views: aten::view\n", "ops.yaml")
    with pytest.raises(RulePackError, match="cannot read"):
        load_ops(tmp_path / "missing.yaml")


def test_the_emulator_reads_the_same_table() -> None:
    torch = pytest.importorskip("torch")
    from neuron_emu.ops import registry  # importing it does not activate the device

    assert registry.table() is load_ops()
    # The device's narrowing and the record's downcasts both come from the table's dtype_downcast.
    assert registry.downcast() == {torch.float64: torch.float32, torch.int64: torch.int32}
