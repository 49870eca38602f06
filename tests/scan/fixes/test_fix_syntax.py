"""`fixes.syntax`: where a statement stands, which the `remove_statement` fixes rely on."""

from __future__ import annotations

import ast
import textwrap

from neuron_migrate.scan.fixes import syntax
from neuron_migrate.scan.fixes.syntax import block_of

SOURCE = textwrap.dedent("""
    import torch

    class Trainer:
        def step(self):
            try:
                torch.cuda.synchronize()
            except RuntimeError:
                torch.cuda.empty_cache()
            else:
                pass
            finally:
                torch.cuda.reset_peak_memory_stats()
            match self.mode:
                case "fast":
                    torch.cuda.synchronize()
            f = lambda: torch.cuda.synchronize()
            return f
    """)


def _stmt(tree: ast.Module, line: int) -> ast.stmt:
    return next(n for n in ast.walk(tree) if isinstance(n, ast.stmt) and n.lineno == line)


def test_block_of_finds_the_list_holding_each_statement() -> None:
    tree = ast.parse(SOURCE)
    trainer = tree.body[1]
    assert isinstance(trainer, ast.ClassDef)
    step = trainer.body[0]
    assert isinstance(step, ast.FunctionDef)
    guarded, match = step.body[0], step.body[1]
    assert isinstance(guarded, ast.Try) and isinstance(match, ast.Match)
    assert block_of(tree, tree.body[0]) is tree.body
    assert block_of(tree, step) is trainer.body
    assert block_of(tree, _stmt(tree, 7)) is guarded.body
    assert block_of(tree, _stmt(tree, 9)) is guarded.handlers[0].body
    assert block_of(tree, _stmt(tree, 11)) is guarded.orelse
    assert block_of(tree, _stmt(tree, 13)) is guarded.finalbody
    assert block_of(tree, _stmt(tree, 16)) is match.cases[0].body
    assert block_of(tree, _stmt(tree, 17)) is step.body


def test_block_of_a_statement_elsewhere_is_none() -> None:
    tree = ast.parse(SOURCE)
    assert block_of(tree, ast.parse("x = 1").body[0]) is None


def test_walk_visits_what_ast_walk_does_in_its_order_less_contexts_and_operators() -> None:
    tree = ast.parse(
        "import torch\n@dec(x=1)\nclass A(B, metaclass=M):\n    def f(self, a: int = 2, *b, **c) -> None:\n"
        "        if a and not b or -a < 3:\n            return [i for i in b if i]\n"
        "        match c:\n            case {'k': [1, *rest]}:\n                print(f'{a!r:>{c}}', *rest)\n"
        "        try:\n            del a\n        except (KeyError, ValueError) as e:\n            raise e from None\n"
        "x = lambda q=3: q ** 2\n")
    singletons = (ast.expr_context, ast.operator, ast.unaryop, ast.boolop, ast.cmpop)
    expected = [n for n in ast.walk(tree) if not isinstance(n, singletons)]
    found = syntax.walk(tree)
    assert len(found) == len(expected) and all(a is b for a, b in zip(found, expected, strict=True))


def test_the_innermost_function_holding_a_node() -> None:
    """Nested functions, a method, a decorator (the enclosing scope's), module-level code after
    functions: each node's function is found from the functions' spans."""
    tree = ast.parse(
        "def outer():\n    def inner():\n        a = 1\n    b = 2\n\n\n"
        "class C:\n    @deco(c)\n    def method(self):\n        d = 4\n\n\ne = 5\n")
    found = syntax.functions(tree)
    starts = [(fn.lineno, fn.col_offset) for fn in found]
    names = {n.id: syntax.innermost(found, starts, n) for n in ast.walk(tree) if isinstance(n, ast.Name)}
    assert [fn.name for fn in found] == ["outer", "inner", "method"]
    assert {k: v.name if v else None for k, v in names.items() if k in "abcde"} == {
        "a": "inner", "b": "outer", "c": None, "d": "method", "e": None}
