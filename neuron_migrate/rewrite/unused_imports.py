"""libcst's `RemoveImportsVisitor` (scope analysis: only unread names go) with three additions:
forced removals (an added import rebinds the name), names read in other notebook cells count as
uses, and the comments above a removed line move to the next statement instead of vanishing.
Kept apart from `imports` because importing `libcst.codemod` costs more than libcst itself."""

from __future__ import annotations

from collections.abc import Sequence

import libcst as cst
from libcst.codemod import CodemodContext
from libcst.codemod.visitors import RemoveImportsVisitor

from neuron_migrate.rewrite.imports import ImportEditError, ImportKey


class _RemoveUnused(RemoveImportsVisitor):
    """`RemoveImportsVisitor` plus: forced removals, names read elsewhere, comments kept."""

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
        self._orphans: list[list[cst.EmptyLine]] = [[]]  # leading lines of removed lines, per block

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

    # A removed line takes the comments above it along; hand them to the next statement instead.
    def visit_IndentedBlock(self, node: cst.IndentedBlock) -> None:
        self._orphans.append([])

    def leave_IndentedBlock(self, original_node: cst.IndentedBlock, updated_node: cst.IndentedBlock) -> cst.IndentedBlock:
        left = self._orphans.pop()
        if left and updated_node.body:
            return updated_node.with_changes(footer=(*left, *updated_node.footer))
        return updated_node

    def leave_Module(self, original_node: cst.Module, updated_node: cst.Module) -> cst.Module:
        left = self._orphans[0]
        if left:
            return updated_node.with_changes(footer=(*left, *updated_node.footer))
        return updated_node

    def leave_SimpleStatementLine(
        self, original_node: cst.SimpleStatementLine, updated_node: cst.SimpleStatementLine
    ) -> cst.SimpleStatementLine | cst.RemovalSentinel:
        if not updated_node.body:
            if any(line.comment is not None for line in updated_node.leading_lines):
                self._orphans[-1].extend(updated_node.leading_lines)
            return cst.RemoveFromParent()
        return self._adopt(updated_node)

    def on_leave(self, original_node: cst.CSTNode, updated_node: cst.CSTNode):  # type: ignore[no-untyped-def]
        result = super().on_leave(original_node, updated_node)
        if isinstance(result, cst.BaseCompoundStatement):
            return self._adopt(result)
        return result

    def _adopt(self, node):  # type: ignore[no-untyped-def]
        pending = self._orphans[-1]
        if not pending:
            return node
        self._orphans[-1] = []
        return node.with_changes(leading_lines=(*pending, *node.leading_lines))


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




def remove_imports(
    module: cst.Module, targets: Sequence[ImportKey], forced: set[ImportKey], used_elsewhere: frozenset[str]
) -> str:
    return _RemoveUnused(CodemodContext(), targets, forced, used_elsewhere).transform_module(module).code
