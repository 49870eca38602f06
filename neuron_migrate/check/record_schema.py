"""JSON Schemas of the two records a check run reads, and their validation.

The records are written by the checked process, which runs the user's code: a program can write
anything there. Each record is validated before it is read, so one of the wrong shape is reported
(NM916) and left out instead of crashing the report. The schemas pin what the readers use
(check.records, check.analyze, check.parity), formats as documented in `neuron_emu.record` and
`neuron_migrate.check.probe.child`; keys not named here are allowed, as readers ignore them.
"""

from __future__ import annotations

import functools
from typing import Any

_INT = {"type": "integer"}
_COUNT = {"type": "integer", "minimum": 0}
_STR = {"type": "string"}
_BOOL = {"type": "boolean"}
_NUM = {"type": "number"}


def _obj(required: dict[str, Any], optional: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"type": "object", "required": sorted(required), "properties": {**required, **(optional or {})}}


def _opt(schema: dict[str, Any]) -> dict[str, Any]:
    return {"anyOf": [{"type": "null"}, schema]}


def _list(items: dict[str, Any]) -> dict[str, Any]:
    return {"type": "array", "items": items}


def _map(values: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "additionalProperties": values}


_SITE = {"$ref": "#/$defs/site"}
_DEFS: dict[str, Any] = {
    "site": _obj({"file": _STR, "line": _INT}, {"function": _STR, "autograd_node": _opt(_STR)}),
    # Input = [[int...], dtype] | [Input...] | null
    "input": {"anyOf": [
        {"type": "null"},
        {"type": "array", "prefixItems": [_list(_INT), _STR], "minItems": 2, "maxItems": 2},
        _list({"$ref": "#/$defs/input"}),
    ]},
    "signature": _list({"$ref": "#/$defs/input"}),
    "frame": {"allOf": [_SITE, _obj({}, {"source": _STR})]},
}

EMU: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "$defs": _DEFS,
    **_obj({"schema_version": {"const": 1}}, {
        "process": _obj({}, {"pid": _opt(_INT), "rank": _opt(_INT)}),
        "ops": _list(_obj(
            {"name": _STR, "kind": _STR, "count": _COUNT},
            {"phases": _obj({}, {"fwd": _COUNT, "bwd": _COUNT}),
             "signatures": _list(_obj({"inputs": {"$ref": "#/$defs/signature"}, "count": _COUNT})),
             "first_site": _opt(_SITE)})),
        "compiles": _obj({}, {
            "count": _COUNT,
            "sites": _list(_obj({"site": _SITE, "op": _STR},
                                {"phase": _STR, "signatures": _list({"$ref": "#/$defs/signature"})})),
        }),
        "host_to_device": _list(_obj({"site": _SITE, "count": {"type": "integer", "minimum": 1}, "bytes": _COUNT},
                                     {"distinct_sources": _opt(_COUNT)})),
        "downcasts": _list(_obj({"op": _STR, "dtype": _STR, "to": _STR, "count": _COUNT})),
        "pre_init_allocations": _opt(_obj({}, {"count": _COUNT, "bytes": _COUNT, "first_site": _opt(_SITE),
                                               "process_group_initialized": _BOOL})),
        "dynamo": _opt(_obj({}, {
            "graphs": _COUNT,
            "graph_breaks": _list(_obj({}, {"reason": _STR, "site": _opt(_SITE), "count": _COUNT})),
            "recompiles": _list(_obj({}, {"reason": _STR, "site": _opt(_SITE), "function": _opt(_STR)})),
            "recompile_limit": _list(_obj({}, {"reason": _opt(_STR), "site": _opt(_SITE), "function": _opt(_STR)})),
        })),
        "device_mismatch": _opt(_obj({"message": _STR}, {
            "site": _opt(_SITE), "op": _opt(_STR), "argument": _opt(_STR), "argument_device": _opt(_STR),
            "device": _opt(_STR)})),
        "exception": _opt(_obj({"type": _STR, "message": _STR}, {
            "site": _opt(_SITE), "op": _opt(_STR), "argument": _opt(_STR), "argument_device": _opt(_STR),
            "device": _opt(_STR)})),
    }),
}

_HINT = _obj({}, {"cause": _STR, "hint": _STR, "op": _opt(_STR), "argument": _opt(_STR),
                  "argument_device": _opt(_STR), "device": _opt(_STR)})
_STAMPS = ("passes", "slots", "runs", "last_runs", "calls", "frame_calls", "call_first_passes", "line_last_calls")

CHILD: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "$defs": _DEFS,
    **_obj({"format": {"const": "neuron-migrate-check-child"}, "version": {"const": 1}}, {
        "pid": _opt(_INT), "rank": _opt(_INT), "mode": _STR, "target": _STR, "target_file": _opt(_STR),
        "partial": _BOOL, "last_site": _opt({"$ref": "#/$defs/frame"}), "seal": _STR,
        "start_error": _opt(_obj({"type": _STR, "message": _STR})),
        "wall_s": _NUM,
        "exit": _obj({"status": {"enum": ["ok", "exception", "exit", "terminated", "running"]}, "code": _INT}),
        "exception": _opt(_obj({"type": _STR, "message": _STR},
                               {"frames": _list({"$ref": "#/$defs/frame"}), "mismatch": _opt(_HINT)})),
        "terminated": _opt(_obj({"signal": _STR}, {"frames": _list({"$ref": "#/$defs/frame"})})),
        "cpu_params": _list(_obj({"symbol": _STR, "kind": _STR, "shape": _list(_INT), "dtype": _STR,
                                  "site": _SITE, "calls": _COUNT})),
        "module_transfers": _list(_obj({"site": _SITE, "calls": _COUNT})),
        "compile_passes": _list(_obj({"site": _SITE, "op": _STR},
                                     {"signatures": _list({"$ref": "#/$defs/signature"}),
                                      "in_module": _list(_BOOL), **{k: _list(_INT) for k in _STAMPS}})),
        "host_reads": _list(_obj({"site": _SITE, "count": _COUNT}, {"kinds": _map(_COUNT)})),
        "copies": _list(_obj({"site": _SITE}, {"count": _COUNT, "repeated": _COUNT, "bytes": _COUNT,
                                                "contexts": _COUNT})),
        "values": _obj({}, {"kept": _list({"type": "array", "prefixItems": [_STR, _INT, _STR, {"type": "array"}],
                                           "minItems": 4, "maxItems": 4}),
                            "dropped": _COUNT}),
        "pytest": _obj({}, {"allowed": _map(_COUNT), "failed": _list(_STR)}),
        "dynamo_sites": _obj({}, {"recompiles": _list(_opt(_SITE)), "recompile_limit": _list(_opt(_SITE))}),
        "device_use": _obj({}, {
            "module_calls": _obj({}, {"neuron": _COUNT, "cpu": _COUNT}),
            "first_cpu_call": _opt({"allOf": [_SITE, _obj({}, {"module": _STR})]}),
            "library_devices": _map(_STR),
        }),
    }),
}


@functools.cache
def _validator(kind: str) -> Any:
    from jsonschema import Draft202012Validator

    return Draft202012Validator({"emu": EMU, "child": CHILD}[kind])


def problem(kind: str, data: Any) -> str | None:
    """None if `data` is a valid `kind` ("emu" | "child") record, else the first error, with the path
    to the offending value (`ops/3/count: 'x' is not of type 'integer'`)."""
    from jsonschema.exceptions import best_match

    error = best_match(_validator(kind).iter_errors(data))
    if error is None:
        return None
    where = "/".join(str(p) for p in error.absolute_path)
    message = error.message if len(error.message) <= 160 else error.message[:159] + "…"
    return f"{where}: {message}" if where else message
