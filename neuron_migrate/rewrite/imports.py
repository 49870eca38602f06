"""Import management after a fix: drop imports a fix made unused, add the ones its code needs.

Removal uses libcst's scope analysis (`RemoveImportsVisitor` only removes names nothing reads) to
decide, and deletes text at `ast` positions, so every byte outside a removed import stays.
Addition is a text insertion placed after the last top-level import that precedes the first edit
needing it (else after the docstring, else before the first statement), so module-level code
never runs before the import it needs and every other byte stays as it was. A name an added
import binds displaces a `remove_imports` import binding the same name
(`from torch.cuda.amp import GradScaler` -> `from torch.amp import GradScaler`).
"""

from __future__ import annotations

import ast
import bisect
from collections.abc import Iterable, Sequence
from typing import Any

from neuron_migrate.rewrite.apply import Rejected, line_starts, newline_of


class ImportEditError(Rejected):
    """An `add_imports`/`remove_imports` entry that cannot be applied to this file."""


ImportKey = tuple[str, str | None, str | None]  # (module, name or None for `import module`, alias)


def _keys_of(node: ast.Import | ast.ImportFrom) -> list[ImportKey]:
    if isinstance(node, ast.Import):
        return [(a.name, None, a.asname) for a in node.names]
    if node.level or node.module is None:
        return []
    return [(node.module, a.name, a.asname) for a in node.names]


def _render(key: ImportKey) -> str:
    module, name, alias = key
    base = f"import {module}" if name is None else f"from {module} import {name}"
    return base + (f" as {alias}" if alias else "")


def _bound_name(key: ImportKey) -> str:
    module, name, alias = key
    return alias or (name if name is not None else module.split(".")[0])


def parse_statements(statements: Iterable[str]) -> list[ImportKey]:
    """`add_imports` entries ('import torch', 'from torch.amp import GradScaler, autocast')."""
    keys: list[ImportKey] = []
    for stmt in statements:
        try:
            tree = ast.parse(stmt.strip())
        except SyntaxError as exc:
            raise ImportEditError(f"bad add_imports entry {stmt!r}") from exc
        nodes = tree.body
        if not nodes or not all(isinstance(n, (ast.Import, ast.ImportFrom)) for n in nodes):
            raise ImportEditError(f"add_imports entry is not an import: {stmt!r}")
        for node in nodes:
            if isinstance(node, ast.ImportFrom) and (node.level or node.module is None):
                raise ImportEditError(f"add_imports entry is a relative import: {stmt!r}")
            for key in _keys_of(node):  # type: ignore[arg-type]
                if key not in keys:
                    keys.append(key)
    return keys


def _module_level_imports(tree: ast.Module) -> list[ast.Import | ast.ImportFrom]:
    """Imports that bind names in the module's namespace (not inside functions or classes)."""
    found: list[ast.Import | ast.ImportFrom] = []
    stack: list[ast.AST] = list(tree.body)
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            found.append(node)
        elif not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)) and isinstance(
            node, ast.stmt
        ):
            stack.extend(child for child in ast.iter_child_nodes(node) if isinstance(child, ast.stmt))
            if isinstance(node, ast.Try):
                stack.extend(s for h in node.handlers for s in h.body)
            elif isinstance(node, ast.Match):
                stack.extend(s for c in node.cases for s in c.body)
    return found


def bound_imports(source: str | ast.Module) -> frozenset[str]:
    """Every module-level import of `source` (text or its tree) as normalised one-name statements."""
    tree = ast.parse(source) if isinstance(source, str) else source
    return frozenset(_render(k) for node in _module_level_imports(tree) for k in _keys_of(node))


def names_read(source: str) -> frozenset[str]:
    """Names `source` reads (for judging whether another cell still needs an import)."""
    tree = ast.parse(source)
    return frozenset(n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Store))


def _satisfied(key: ImportKey, present: frozenset[str]) -> bool:
    module, name, alias = key
    if _render(key) in present:
        return True
    if name is None and alias is None:  # `import a.b.c` also imports and binds `a.b`
        return any(p.startswith(f"import {module}.") and " as " not in p for p in present)
    return name is not None and f"from {module} import *" in present


# --- removal ----------------------------------------------------------------------------------


def _matches(entry: str, key: ImportKey) -> bool:
    module, name, _alias = key
    return entry == (module if name is None else f"{module}.{name}")


def parse_with_libcst(source: str) -> Any:
    """The libcst Module of `source` (the caller's final syntax check, and the tree for removal)."""
    import libcst

    try:
        return libcst.parse_module(source)
    except libcst.ParserSyntaxError as exc:
        raise ImportEditError(f"libcst cannot parse the rewritten code (line {exc.raw_line})") from None
    except RecursionError:
        raise ImportEditError("libcst cannot parse the rewritten code (nested too deeply)") from None


def remove_unused_imports(
    source: str,
    entries: Sequence[str],
    module: Any = None,
    *,
    tree: ast.Module | None = None,
    add: Sequence[str] = (),
    used_elsewhere: frozenset[str] = frozenset(),
) -> str:
    """Remove the imports named by `entries` ('module' or 'module.name') that nothing reads.

    `module` and `tree` are `source` already parsed by `parse_with_libcst` and `ast` (each parsed
    here when None).
    """
    tree = tree or ast.parse(source)
    present = [k for node in ast.walk(tree) if isinstance(node, (ast.Import, ast.ImportFrom)) for k in _keys_of(node)]
    targets = [k for k in dict.fromkeys(present) if any(_matches(e, k) for e in entries)]
    if not targets:
        return source
    added = parse_statements(add)
    added_names = {_bound_name(k) for k in added}
    forced = {k for k in targets if _bound_name(k) in added_names and k not in added}
    from neuron_migrate.rewrite.unused_imports import remove_imports  # libcst.codemod is slow to import

    if module is None:
        module = parse_with_libcst(source)
    try:
        return remove_imports(source, module, tree, targets, forced, used_elsewhere)
    except RecursionError:
        raise ImportEditError("import clean-up failed: the code is nested too deeply") from None


# --- addition ---------------------------------------------------------------------------------


def _is_docstring(node: ast.stmt) -> bool:
    return isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)


def _first_line(node: ast.stmt) -> int:
    decorators = getattr(node, "decorator_list", None) or []
    return min([node.lineno, *(d.lineno for d in decorators)])


def add_missing_imports(
    source: str,
    statements: Sequence[str],
    *,
    before_offset: int,
    tree: ast.Module | None = None,
    bound_elsewhere: frozenset[str] = frozenset(),
) -> str:
    """Insert the `statements` not already imported, before the code at `before_offset` needs them.

    `tree` is `source` already parsed with `ast` (parsed here when None).
    """
    tree = tree or ast.parse(source)
    present = bound_imports(tree) | bound_elsewhere
    missing = [k for k in parse_statements(statements) if not _satisfied(k, present)]
    if not missing:
        return source
    starts = line_starts(source)
    newline = newline_of(source)
    edit_line = bisect.bisect_right(starts, max(before_offset, 0))  # 1-based line of the first edit

    body = tree.body
    imports_before = [n for n in body if isinstance(n, (ast.Import, ast.ImportFrom)) and (n.end_lineno or n.lineno) < edit_line]
    if imports_before:
        after_line, blank_after = imports_before[-1].end_lineno or imports_before[-1].lineno, False
    elif body and _is_docstring(body[0]) and (body[0].end_lineno or 0) < edit_line:
        after_line, blank_after = body[0].end_lineno or body[0].lineno, True
    elif body:
        after_line, blank_after = _first_line(body[0]) - 1, True
    else:
        raise ImportEditError("no statement to place an import before")

    lines = _group(missing)
    text = "".join(line + newline for line in lines)
    if after_line >= len(starts):  # the statement is on the last line
        insert_at = len(source)
        if not source.endswith(("\n", "\r")):
            text = newline + text
    else:
        insert_at = starts[after_line]
    following = source[insert_at:].split(newline, 1)[0] if insert_at < len(source) else ""
    if blank_after and following.strip():
        text += newline
    return source[:insert_at] + text + source[insert_at:]


def _group(keys: Sequence[ImportKey]) -> list[str]:
    """One statement per module: `from m import a, b`; `import x` lines kept apart."""
    lines: list[str] = []
    from_names: dict[str, list[str]] = {}
    for key in keys:
        module, name, alias = key
        if name is None:
            lines.append(_render(key))
        else:
            if module not in from_names:
                from_names[module] = []
                lines.append(f"\0{module}")
            from_names[module].append(name + (f" as {alias}" if alias else ""))
    return [
        f"from {line[1:]} import {', '.join(from_names[line[1:]])}" if line.startswith("\0") else line for line in lines
    ]
