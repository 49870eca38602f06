"""How a file's text becomes the tree the walk reads: the one seam of the partial parse.

A large file is parsed without the functions that cannot hold a finding (`scan.regions`), which is
most of a cold scan's parse. The partial parse never changes a result:

- every skipped function is still checked for syntax (by `symtable`, which reads the text without
  building a syntax tree); when that check fails for any reason the file is parsed whole, so a
  syntax error anywhere is reported (NM001) with the position the whole parse gives;
- after the walk, `complete` tells whether the walk depended on skipped text (a name an import
  binds to a rule's module used there, a star import, a module root a fix would have to import);
  then the file is parsed and walked whole.

`NEURON_MIGRATE_PARTIAL_PARSE=0` turns it off (every file parsed whole); findings are the same
either way, only slower.
"""

from __future__ import annotations

import ast
import os
import symtable
import warnings
from collections.abc import Collection
from dataclasses import dataclass

from neuron_migrate.scan.aliases import AliasTable
from neuron_migrate.scan.regions import RegionGate, SparseTree

__all__ = ["ENV", "Parsed", "complete", "parse", "parse_whole", "partial_enabled"]

ENV = "NEURON_MIGRATE_PARTIAL_PARSE"


def partial_enabled() -> bool:
    return os.environ.get(ENV, "1").strip() != "0"


@dataclass(frozen=True, slots=True)
class Parsed:
    tree: ast.Module
    sparse: SparseTree | None  # None: the whole file was parsed


def parse_whole(source: str, path: str) -> ast.Module:
    """Raises SyntaxError, or ValueError for a file nested too deeply to parse."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # invalid escape sequences etc. are not ours to report
        try:
            return ast.parse(source, filename=path)
        except (RecursionError, MemoryError) as exc:
            raise ValueError(f"{path}: too deeply nested to parse") from exc


def parse(source: str, path: str, gate: RegionGate | None) -> Parsed:
    """The file's tree: partial when `gate` is given, the switch is on, it pays and every
    skipped function is valid syntax; else whole."""
    if gate is not None and partial_enabled():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            sparse = gate.parse(source, _sparse_parser(path))
            if sparse is not None and _valid(sparse.skipped_text(), path):
                return Parsed(sparse.tree, sparse)
    return Parsed(parse_whole(source, path), None)


def _sparse_parser(path: str):  # type: ignore[no-untyped-def]
    def parse_text(text: str) -> ast.Module:
        try:
            return ast.parse(text, filename=path)
        except (RecursionError, MemoryError) as exc:
            raise SyntaxError("too deeply nested") from exc
    return parse_text


def _valid(text: str, path: str) -> bool:
    """Whether the skipped functions compile. `symtable` parses without building Python syntax
    objects; it also rejects a few things `ast.parse` accepts (a duplicate parameter, a
    `nonlocal` of an outer function's name): the whole parse then decides."""
    try:
        symtable.symtable(text, path, "exec")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return True


def complete(sparse: SparseTree, aliases: AliasTable, gate: RegionGate, fix_roots: Collection[str],
             assigned: Collection[str] = ()) -> bool:
    """Whether the walk of the partial tree saw everything the whole tree would have shown it:
    no skipped function uses a name an import binds to a token's module that the text scan did
    not see, nor a name whose uses decide findings (`assigned`: a module-level name assigned a
    CUDA reference, `_ctx = torch._C._CUDAGreenContext`, each use is a finding; a name holding an
    argument's value, passed on or tested against here); the file star-imports no module with a
    name a rule matches; and no module root a fix may have to import (`fix_roots`) is read only
    in skipped text."""
    if not gate.star_modules.isdisjoint(aliases.stars):
        return False
    if any(sparse.hides(name) for name in assigned):
        return False
    for name, target in aliases.names.items():
        if not gate.hidden(target) <= sparse.anchors.get(name, frozenset()) and sparse.hides(name):
            return False
    bound = set(aliases.names.values())
    return not any(top not in bound and top not in aliases.implicit_seen and sparse.hides(top)
                   for top in fix_roots)
