"""Modules imported by name through a call, which the `match.imports` rules cover too:
`importlib.import_module("cupy")`, `__import__("nvidia.dali")`, and the optional-import helpers
of libraries and projects (`optional_import("tensorrt")` in MONAI, `safe_import_from(
"transformer_engine.pytorch.float8_tensor", "Float8Tensor")` in NeMo): a call whose name holds
`import`, with a module name as its first argument (`pytest.importorskip` skips a test instead).
A probe of whether such a module is installed (`find_spec("apex")`) chooses the code that uses it,
and counts as well.

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

# `import_module(`, `__import__(`, `optional_import(`, `safe_import_from(`, ... or a probe of whether
# the module is installed (`importlib.util.find_spec("apex")`, `_is_package_available("apex")`,
# `module_available(`, `RequirementCache(`), then a quoted dotted name, on the same line or the
# next ones. Not `pytest.importorskip(`: a test that skips itself.
_CALL = re.compile(r"(?:import(?!orskip)\w*|\bfind_spec|\bfind_loader|(?:package|module)_available|\bRequirementCache)"
                   r"[ \t]*\(\s*(['\"])([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)\1")


def import_call_findings(text: str, rel: str, table: ImportTable) -> list[Finding]:
    """One finding per rule per module named in an import call in `text` (the file at `rel`)."""
    if "import" not in text and "_available" not in text and "find_" not in text and "RequirementCache" not in text:
        return []
    found: list[Finding] = []
    lines: Sequence[str] | None = None
    for m in _CALL.finditer(text):
        rules = table.match(m.group(2))
        if not rules:
            continue
        line_start = text.rfind("\n", 0, m.start()) + 1
        before = text[line_start:m.start()]
        if before.lstrip().startswith("#") or "`" in before:  # a comment; prose quoting code (`find_spec("x")`)
            continue
        if lines is None:
            lines = text.split("\n")
        line = text.count("\n", 0, m.start(2)) + 1
        col = m.start(2) - 1 - (text.rfind("\n", 0, m.start(2)) + 1)  # the quoted name
        span = Span(line, col, line, col + len(m.group(2)) + 2)
        found += [rule.finding(rel, span, m.group(2), lines[line - 1], line) for rule in rules]
    return found
