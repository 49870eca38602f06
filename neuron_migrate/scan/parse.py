"""How a file's text becomes the tree the walk reads: the one seam of the partial parse.

A large file is parsed without the functions that cannot hold a finding (`scan.regions`), which is
most of a cold scan's parse. The partial parse never changes a result:

- every skipped function is still checked for syntax (by `symtable`, which reads the text without
  building a syntax tree); when that check fails for any reason the file is parsed whole, so a
  syntax error anywhere is reported (NM001) with the position the whole parse gives;
- after the walk, `depends` tells which skipped functions the walk depended on (one that uses a
  name an import binds to a rule's module, or a module root a fix would have to import, or a
  name whose uses decide findings); `widen` parses the file again with those in, and the walk
  repeats. A star import of a rule's module, or a fourth round, parses the file whole.

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
from neuron_migrate.scan.regions import RegionGate, SparseTree, Use

__all__ = ["ENV", "Parsed", "depends", "parse", "parse_whole", "partial_enabled", "widen"]

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


def depends(sparse: SparseTree, aliases: AliasTable, gate: RegionGate, fix_roots: Collection[str], *,
            read: Collection[str] = (), set_: Collection[str] = (), written: Collection[str] = ()) -> set[int] | None:
    """The skipped regions the walk of the partial tree depended on (indexes, empty when none),
    or None when the whole file must be read (it star-imports a module with a name a rule
    matches). A region is depended on when it reads a name an import binds to a token's module
    that the text scan did not see there; or a name whose uses decide findings (`read`: a
    module-level name assigned a CUDA reference, `_ctx = torch._C._CUDAGreenContext`, each use
    is a finding; a function defaulting to a CUDA device); or assigns an attribute an argument's
    value was looked up in (`set_`); or writes a name passed on or tested against here
    (`written`); or reads a module root that a fix may have to import (`fix_roots`)."""
    if not gate.star_modules.isdisjoint(aliases.stars):
        return None
    bound = set(aliases.names.values())
    reads = [*read, *(top for top in fix_roots if top not in bound and top not in aliases.implicit_seen),
             *(name for name, target in aliases.names.items()
               if not gate.hidden(target) <= sparse.anchors.get(name, frozenset()))]
    return sparse.hiding(written) | sparse.hiding(reads, Use.READ) | sparse.hiding(set_, Use.SET)


def widen(sparse: SparseTree, regions: Collection[int] | None, source: str, path: str) -> Parsed:
    """The file parsed again with the skipped `regions` parsed too (None, as `depends` answers:
    the whole file); whole once none is left. They passed the syntax check with the others, so
    the parse fails only on a split that no longer stands (then the whole parse decides)."""
    if regions is not None and len(regions) < sparse.skipped:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                tree = _sparse_parser(path)(sparse.blanked(regions))
            except SyntaxError:
                pass
            else:
                wider = sparse.without(tree, regions)
                if wider.stands():
                    return Parsed(tree, wider)
    return Parsed(parse_whole(source, path), None)
