"""Modules imported by name through a call, which the `match.imports` rules cover too:
`importlib.import_module("cupy")`, `__import__("nvidia.dali")`, and the optional-import helpers
of libraries and projects (`optional_import("tensorrt")` in MONAI, `safe_import_from(
"transformer_engine.pytorch.float8_tensor", "Float8Tensor")` in NeMo): a call whose name holds
`import`, with a module name as its first argument (`pytest.importorskip` skips a test instead).
A probe of whether such a module is installed (`find_spec("apex")`) or already imported
(`"apex" in sys.modules`, `sys.modules.get("apex")`) chooses the code that uses it, and counts as
well.

Like `scan.matchers.extensions`, the calls are found in the text of every Python file, so a
function the partial parse leaves out is read as well; a comment line is passed over, and a line
of a string that reads as such a call counts too. The walk binds the name a module-level
assignment gives such a call's result (`scan.analyze`), so its uses resolve (`trt.Logger`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from neuron_migrate.findings import Finding, Span
from neuron_migrate.scan.matchers.imports import ImportTable

# `import_module(`, `__import__(`, `optional_import(`, `safe_import_from(`, `OptionalImport(` ... then a quoted dotted
# name, on the same line or the next ones. Not `pytest.importorskip(`: a test that skips itself.
_CALL = re.compile(r"(?i:import)(?!orskip)\w*[ \t]*\(\s*(['\"])([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)\1")
# A probe of whether the module is installed (`importlib.util.find_spec("apex")`,
# `_is_package_available("apex")`, `module_available(`, `RequirementCache(`), looked for only in a
# text that names one: a pattern that starts with no literal is tried at every position.
_PROBES = ("find_spec", "find_loader", "package_available", "module_available", "RequirementCache")
_PROBE = re.compile(r"(?:%s)[ \t]*\(\s*(['\"])([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)\1" % "|".join(_PROBES))
# `"apex" in sys.modules` (Transformer-XL's fp16 guard), `sys.modules["apex"]`, `sys.modules.get("apex")`
_LOADED = re.compile(r"(['\"])([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)\1[ \t]+(?:not[ \t]+)?in[ \t]+sys\.modules\b"
                     r"|sys\.modules(?:\.get)?[ \t]*[\[(][ \t]*(['\"])([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)\3")


def import_call_findings(text: str, rel: str, table: ImportTable) -> list[Finding]:
    """One finding per rule per module named in an import call in `text` (the file at `rel`)."""
    calls = list(_CALL.finditer(text)) if "import" in text else []
    if any(p in text for p in _PROBES):
        calls = sorted([*calls, *_PROBE.finditer(text)], key=lambda m: m.start())
    if "sys.modules" in text:
        calls = sorted([*calls, *_LOADED.finditer(text)], key=lambda m: m.start())
    found: list[Finding] = []
    lines: Sequence[str] | None = None
    for m in calls:
        group = 2 if m.group(2) is not None else 4  # (`_LOADED`'s second form names it in its fourth)
        name = m.group(group)
        rules = table.match(name)
        if not rules:
            continue
        line_start = text.rfind("\n", 0, m.start()) + 1
        before = text[line_start:m.start()]
        if before.lstrip().startswith("#") or "`" in before:  # a comment; prose quoting code (`find_spec("x")`)
            continue
        if lines is None:
            lines = text.split("\n")
        line = text.count("\n", 0, m.start(group)) + 1
        col = m.start(group) - 1 - (text.rfind("\n", 0, m.start(group)) + 1)  # the quoted name
        span = Span(line, col, line, col + len(name) + 2)
        found += [rule.finding(rel, span, name, lines[line - 1], line) for rule in rules]
    return found
