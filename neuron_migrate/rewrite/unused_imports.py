"""Which imports go (libcst's `RemoveImportsVisitor`: scope analysis, only unread names) and the
text edits that take them out of the original text.

libcst decides; it never writes. Regenerating the module from its tree changed bytes outside any
import (a form feed and the blank lines above a removed import, a CR-only file's final `\\r`), so
the decisions are turned into deletions spliced into the source at `ast` positions: a removed
name with its comma, a statement with its `;`, or a statement's whole lines (its trailing comment
too). The lines above it (comments, blank lines, form feeds) stay. A block left empty gets `pass`
where its first statement was. Three additions to the visitor: forced removals (an added import
rebinds the name), names read in other notebook cells count as uses, and explicit re-exports stay.
Kept apart from `imports` because importing `libcst.codemod` costs more than libcst itself.
"""

from __future__ import annotations

import ast
import itertools
import re
from collections.abc import Sequence

import libcst as cst
from libcst.codemod import CodemodContext
from libcst.codemod.visitors import RemoveImportsVisitor

from neuron_migrate.rewrite.apply import line_starts
from neuron_migrate.rewrite.imports import ImportEditError, ImportKey
from neuron_migrate.scan.matchers.site import LineIndex

_Decision = tuple[tuple[str, ...], frozenset[int]]  # (bound names in order, indices of the ones removed)


class _RemoveUnused(RemoveImportsVisitor):
    """`RemoveImportsVisitor` plus forced removals and names read elsewhere; it records, per import
    statement in source order, which of its names it removes."""

    def __init__(
        self,
        context: CodemodContext,
        targets: Sequence[ImportKey],
        forced: set[ImportKey],
        used_elsewhere: frozenset[str],
    ) -> None:
        super().__init__(context, list(targets))
        self._forced = forced
        self._used_elsewhere = used_elsewhere
        self.decisions: list[_Decision] = []

    def visit_Module(self, node: cst.Module) -> None:
        super().visit_Module(node)
        exported = _all_names(node)
        for alias in list(self._unused_imports):
            name = _alias_bound_name(alias)
            # `import x as x` / `from m import x as x` and `__all__` entries are the module's API
            # (PEP 484 re-exports): other modules import them, so no use here is no reason to go.
            if name in self._used_elsewhere or name in exported or _asname(alias) == _dotted(alias.name):
                del self._unused_imports[alias]

    def visit_Import(self, node: cst.Import) -> None:
        for alias in node.names:
            if (_dotted(alias.name), None, _asname(alias)) in self._forced:
                self._unused_imports[alias] = node

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        if isinstance(node.names, cst.ImportStar) or node.relative or node.module is None:
            return
        module = _dotted(node.module)
        for alias in node.names:
            if (module, _dotted(alias.name), _asname(alias)) in self._forced:
                self._unused_imports[alias] = node

    def leave_Import(self, original_node: cst.Import, updated_node: cst.Import):  # type: ignore[no-untyped-def]
        result = super().leave_Import(original_node, updated_node)
        self._record(original_node.names, result)
        return result

    def leave_ImportFrom(  # type: ignore[no-untyped-def]
        self, original_node: cst.ImportFrom, updated_node: cst.ImportFrom
    ):
        result = super().leave_ImportFrom(original_node, updated_node)
        self._record(() if isinstance(original_node.names, cst.ImportStar) else original_node.names, result)
        return result

    def _record(self, names: Sequence[cst.ImportAlias], result: object) -> None:
        bound = tuple(_dotted(a.name) for a in names)
        if isinstance(result, cst.RemovalSentinel):
            self.decisions.append((bound, frozenset(range(len(names)))))
            return
        kept = [_dotted(a.name) for a in getattr(result, "names", ())] if names else []
        removed: set[int] = set()
        k = 0
        for i, name in enumerate(bound):  # the kept names are a subsequence of the original ones
            if k < len(kept) and kept[k] == name:
                k += 1
            else:
                removed.add(i)
        self.decisions.append((bound, frozenset(removed)))


def _dotted(node: cst.BaseExpression) -> str:
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        return f"{_dotted(node.value)}.{node.attr.value}"
    raise ImportEditError("unexpected import form")


def _asname(alias: cst.ImportAlias) -> str | None:
    if alias.asname is None:
        return None
    name = alias.asname.name
    return name.value if isinstance(name, cst.Name) else None


def _all_names(module: cst.Module) -> frozenset[str]:
    """The string entries of a module-level `__all__ = [...]` / `(...)`."""
    names: set[str] = set()
    for stmt in module.body:
        if not isinstance(stmt, cst.SimpleStatementLine):
            continue
        for small in stmt.body:
            if isinstance(small, (cst.Assign, cst.AugAssign, cst.AnnAssign)):
                targets = [t.target for t in small.targets] if isinstance(small, cst.Assign) else [small.target]
                if any(isinstance(t, cst.Name) and t.value == "__all__" for t in targets) and isinstance(
                    small.value, (cst.List, cst.Tuple)
                ):
                    for el in small.value.elements:
                        if isinstance(el.value, cst.SimpleString):
                            names.add(el.value.evaluated_value if isinstance(el.value.evaluated_value, str) else "")
    return frozenset(names)


def _alias_bound_name(alias: cst.ImportAlias) -> str:
    asname = _asname(alias)
    return asname or _dotted(alias.name).split(".")[0]


# --- from decisions to text edits -----------------------------------------------------------------

_SAME_LOGICAL_LINE = re.compile(r"[ \t\f]*(?:\\(?:\r\n|\r|\n)[ \t\f]*)*;[ \t\f]*(?:\\(?:\r\n|\r|\n)[ \t\f]*)*")
_Edit = tuple[int, int, str]  # (start, end, replacement) in the source's characters


class _Text:
    """Character offsets of `ast` positions in one source."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.index = LineIndex(source)
        self.starts = line_starts(source)

    def at(self, lineno: int, byte_col: int) -> int:
        return self.starts[lineno - 1] + self.index.col(lineno, byte_col)

    def start(self, node: ast.stmt | ast.alias) -> int:
        return self.at(node.lineno, node.col_offset)

    def end(self, node: ast.stmt | ast.alias) -> int:
        return self.at(node.end_lineno or node.lineno, node.end_col_offset or 0)

    def line_start(self, lineno: int) -> int:
        return self.starts[lineno - 1]

    def next_line_start(self, lineno: int) -> int:
        return self.starts[lineno] if lineno < len(self.starts) else len(self.source)


def _blocks(tree: ast.Module) -> list[list[ast.stmt]]:
    """Every statement list of the tree: the module's, then bodies, branches, handlers, cases."""
    found: list[list[ast.stmt]] = []
    for node in ast.walk(tree):
        for _, value in ast.iter_fields(node):
            if isinstance(value, list) and value and isinstance(value[0], ast.stmt):
                found.append(value)
    return found


def _joined(text: _Text, a: ast.stmt, b: ast.stmt) -> bool:
    """`a; b` on one logical line."""
    return _SAME_LOGICAL_LINE.fullmatch(text.source, text.end(a), text.start(b)) is not None


def _alias_edits(text: _Text, node: ast.Import | ast.ImportFrom, removed: frozenset[int]) -> list[_Edit]:
    """Take some names out of a statement that keeps others: each with its comma."""
    names = node.names
    edits: list[_Edit] = []
    i = 0
    while i < len(names):
        if i not in removed:
            i += 1
            continue
        j = i
        while j + 1 < len(names) and j + 1 in removed:
            j += 1
        if j + 1 < len(names):  # `a, ` up to the next kept name
            edits.append((text.start(names[i]), text.start(names[j + 1]), ""))
        else:  # a trailing run: `, a` after the last kept name (a trailing comma stays)
            edits.append((text.end(names[i - 1]), text.end(names[j]), ""))
        i = j + 1
    return edits


def _statement_edits(text: _Text, tree: ast.Module, gone: set[int]) -> list[_Edit]:
    """Delete the statements whose `id` is in `gone`, keeping every block non-empty."""
    edits: list[_Edit] = []
    for block in _blocks(tree):
        if not any(id(s) in gone for s in block):
            continue
        emptied = block is not tree.body and all(id(s) in gone for s in block)  # a module may be empty
        chains: list[list[ast.stmt]] = [[block[0]]]  # statements sharing one logical line
        for prev, stmt in itertools.pairwise(block):
            if _joined(text, prev, stmt):
                chains[-1].append(stmt)
            else:
                chains.append([stmt])
        for n, chain in enumerate(chains):
            if not any(id(s) in gone for s in chain):
                continue
            if all(id(s) in gone for s in chain):
                first, last = chain[0], chain[-1]
                if emptied and n == 0:  # the block needs a statement: `pass` where the first was
                    edits.append((text.start(first), text.end(last), "pass"))
                    continue
                start = text.line_start(first.lineno)
                if text.source[start : text.start(first)].strip(" \t\f"):
                    edits.append((text.start(first), text.end(last), ""))  # not alone on its line
                else:
                    edits.append((start, text.next_line_start(last.end_lineno or last.lineno), ""))
                continue
            kept = [i for i, s in enumerate(chain) if id(s) not in gone]
            for i, stmt in enumerate(chain):
                if id(stmt) in gone and i < kept[-1]:
                    edits.append((text.start(stmt), text.start(chain[i + 1]), ""))  # `x; ` up to the next
            if kept[-1] < len(chain) - 1:  # `; x; y` after the last kept statement
                edits.append((text.end(chain[kept[-1]]), text.end(chain[-1]), ""))
    return edits


def _import_statements(tree: ast.Module) -> list[ast.Import | ast.ImportFrom]:
    found = [n for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom))]
    return sorted(found, key=lambda n: (n.lineno, n.col_offset))


def remove_imports(
    source: str,
    module: cst.Module,
    tree: ast.Module,
    targets: Sequence[ImportKey],
    forced: set[ImportKey],
    used_elsewhere: frozenset[str],
) -> str:
    """`source` (parsed as `module` by libcst and as `tree` by `ast`) without the imports among
    `targets` that nothing reads (and the `forced` ones), every other character kept."""
    visitor = _RemoveUnused(CodemodContext(), targets, forced, used_elsewhere)
    visitor.transform_module(module)
    statements = _import_statements(tree)
    if len(statements) != len(visitor.decisions):
        raise ImportEditError("import clean-up could not match libcst's imports to the code's")
    text = _Text(source)
    gone: set[int] = set()
    edits: list[_Edit] = []
    for node, (bound, removed) in zip(statements, visitor.decisions, strict=True):
        if tuple(a.name for a in node.names if a.name != "*") != bound:
            raise ImportEditError("import clean-up could not match libcst's imports to the code's")
        if not removed:
            continue
        if len(removed) == len(node.names):
            gone.add(id(node))
        else:
            edits += _alias_edits(text, node, removed)
    edits += _statement_edits(text, tree, gone)
    out: list[str] = []
    pos = 0
    for start, end, replacement in sorted(edits):
        if start < pos:
            raise ImportEditError("import clean-up produced overlapping edits")
        out += [source[pos:start], replacement]
        pos = end
    out.append(source[pos:])
    return "".join(out)
