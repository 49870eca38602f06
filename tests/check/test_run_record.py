"""The typed run records (check.run_record): every record the schema accepts builds."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from neuron_migrate.check import record_schema
from neuron_migrate.check.run_record import EmuRecord


def _instance(schema: dict[str, Any], full: bool, root: dict[str, Any], depth: int = 0) -> Any:
    """A value valid against `schema`: with `full`, every optional key, the non-null branch and one
    list item; without, only the required keys, null where allowed and empty lists."""
    if "$ref" in schema:
        return _instance(root["$defs"][schema["$ref"].rsplit("/", 1)[1]], full, root, depth + 1)
    if "const" in schema:
        return schema["const"]
    if "enum" in schema:
        return schema["enum"][-1 if full else 0]
    if "anyOf" in schema:
        options = schema["anyOf"]
        return _instance(options[-1] if full and depth < 8 else options[0], full, root, depth + 1)
    if "allOf" in schema:
        out: dict[str, Any] = {}
        for part in schema["allOf"]:
            out.update(_instance(part, full, root, depth + 1))
        return out
    kind = schema.get("type")
    if kind == "object":
        props = schema.get("properties", {})
        keys = props if full else schema.get("required", [])
        obj = {k: _instance(props[k], full, root, depth + 1) for k in keys}
        if full and "additionalProperties" in schema:
            obj["extra"] = _instance(schema["additionalProperties"], full, root, depth + 1)
        return obj
    if kind == "array":
        if "prefixItems" in schema:
            return [_instance(s, full, root, depth + 1) for s in schema["prefixItems"]]
        return [_instance(schema["items"], full, root, depth + 1)] if full and "items" in schema else []
    return {"integer": 2, "number": 1.5, "string": "s", "boolean": True, "null": None}[kind]


def _without_one_key(data: Any) -> Iterator[Any]:
    """`data` (a JSON value) with one key of one object removed, for every key of every object."""
    if isinstance(data, dict):
        for k in data:
            yield {j: v for j, v in data.items() if j != k}
            for sub in _without_one_key(data[k]):
                yield {**data, k: sub}
    elif isinstance(data, list):
        for i, item in enumerate(data):
            for sub in _without_one_key(item):
                yield [*data[:i], sub, *data[i + 1:]]


@pytest.mark.parametrize("full", [False, True], ids=["required-keys-only", "every-key"])
def test_every_valid_emu_record_builds(full: bool) -> None:
    data = _instance(record_schema.EMU, full, record_schema.EMU)
    assert record_schema.problem("emu", data) is None
    rec = EmuRecord.from_dict(data)
    if full:
        (op,) = rec.ops
        assert (op.count, op.fwd, op.bwd, op.signatures) == (2, 2, 2, ((data["ops"][0]["signatures"][0]["inputs"], 2),))
        assert rec.dynamo is not None and rec.dynamo.graphs == 2 and rec.pre_init is not None
        assert rec.exception is not None and rec.exception.written == data["exception"]
        assert rec.device_mismatch is not None and rec.device_mismatch.op == "s"
    else:
        assert (rec.ops, rec.compiles, rec.dynamo, rec.exception, rec.pid, rec.rank) == ((), 0, None, None, None, None)


def test_an_emu_record_missing_any_optional_key_builds() -> None:
    full = _instance(record_schema.EMU, True, record_schema.EMU)
    valid = [d for d in _without_one_key(full) if record_schema.problem("emu", d) is None]
    assert len(valid) > 50  # the schema's optional keys, each left out once
    for data in valid:
        EmuRecord.from_dict(data)


def test_empty_objects_and_integral_floats_build_with_defaults() -> None:
    # JSON Schema's "integer" admits 2.0; the defaults are those the readers used before the types.
    data = {"schema_version": 1, "process": {"rank": 1},
            "ops": [{"name": "aten::add.Tensor", "kind": "device", "count": 2.0}],
            "compiles": {"sites": [{"site": {"file": "a.py", "line": 3}, "op": "aten::add.Tensor"}]},
            "host_to_device": [{"site": {"file": "a.py", "line": 1}, "count": 1, "bytes": 4.0}],
            "dynamo": {"graph_breaks": [{}], "recompiles": [{}], "recompile_limit": [{}]},
            "pre_init_allocations": {}}
    assert record_schema.problem("emu", data) is None
    rec = EmuRecord.from_dict(data)
    assert rec.ops[0].count == 2 and type(rec.ops[0].count) is int and rec.rank == 1
    assert rec.compile_sites[0].phase == "fwd" and rec.compile_sites[0].signatures == ()
    assert rec.host_to_device[0].bytes == 4 and rec.host_to_device[0].distinct_sources is None
    assert rec.dynamo is not None
    assert (rec.dynamo.graph_breaks[0].reason, rec.dynamo.graph_breaks[0].count) == ("", 1)
    assert rec.dynamo.recompiles[0].reason == "" and rec.dynamo.recompile_limit[0].reason is None
    assert rec.pre_init is None  # an empty object: nothing recorded
