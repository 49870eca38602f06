"""`fixes.flow` and the shortcut in front of it (`flow.decided_here`): a condition that is an
`if`/`while`/`assert` test, alone or under `and`/`or`/`not` and comparisons, decides that statement
only; the shortcut must agree with the walk up the file's tree wherever it answers."""

from __future__ import annotations

import ast

import pytest

from neuron_migrate.scan.fixes.flow import Flow, decided_here

CONDITIONS = [
    ("if torch.cuda.is_available():\n    pass\n", True),
    ("if not torch.cuda.is_available():\n    pass\n", True),
    ("while torch.cuda.device_count() > 1 and ok:\n    break\n", True),
    ("assert torch.cuda.is_available() or cpu_ok, 'no GPU'\n", True),
    ("if (torch.cuda.device_count() == 0) or not (ok and torch.cuda.is_available()):\n    pass\n", True),
    # Not the test itself: the shortcut has no answer, the walk decides.
    ("if use(torch.cuda.is_available()):\n    pass\n", False),
    ("x = torch.cuda.is_available()\n", False),
    ("if [torch.cuda.is_available()]:\n    pass\n", False),
]


def _condition(stmt: ast.stmt) -> ast.AST:
    """The `torch.cuda.<name>` attribute in the statement (the matched node)."""
    return next(n for n in ast.walk(stmt) if isinstance(n, ast.Attribute) and n.attr in ("is_available", "device_count"))


@pytest.mark.parametrize(("src", "shortcut"), CONDITIONS)
def test_the_shortcut_answers_only_where_the_walk_says_the_value_stays(src: str, shortcut: bool) -> None:
    tree = ast.parse("import torch\n" + src)
    stmt = tree.body[1]
    node = _condition(stmt)
    assert decided_here(stmt, node) is shortcut
    call = next(n for n in ast.walk(stmt) if isinstance(n, ast.Call) and n.func is node)
    if shortcut:
        assert Flow(tree).leaves_file(call) is False
