"""What a fix computation sees: the file's line index (for character columns and source text),
its import table (to spell new names the way the file imports them) and the edit builders."""

from __future__ import annotations

import ast
import re
from collections import Counter
from dataclasses import dataclass, field

from neuron_migrate.findings import Edit, Span
from neuron_migrate.scan.aliases import AliasTable
from neuron_migrate.scan.fixes.flow import Flow
from neuron_migrate.scan.fixes.syntax import Function, functions, innermost, walk
from neuron_migrate.scan.matchers.site import LineIndex

_STRING_START = re.compile(r"([rRuUfFbB]{0,2})('''|\"\"\"|'|\")")


# A mock of the `torch.cuda` API: `monkeypatch.setattr(torch.cuda, "is_available", ...)`,
# `mock.patch("torch.cuda.device_count", ...)`, `patch.object(torch.cuda, ...)`; or an assignment
# (auto-round's HPU shim: `torch.cuda.is_available = lambda: True`).
_CUDA_MOCK = re.compile(r"\b(?:setattr|patch|object)\(\s*(?:torch\.cuda\b|[\"']torch\.cuda\.)")
_CUDA_ASSIGNED = re.compile(r"^[ \t]*(torch\.cuda\.[\w.]+)[ \t]*=(?!=)", re.MULTILINE)
# The words `compute._OTHER_WORD` looks for, standing alone in the text (not `relationship`, `timestamps`).
_OTHER_DEVICES_TEXT = re.compile(r"(?<![a-z])(?:hip|rocm|mi[23]\d\d|npu|xpu|mlu|hpu|musa|mps)(?![a-z])", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class FixResult:
    title: str
    edits: tuple[Edit, ...]
    add_imports: tuple[str, ...] = ()
    remove_imports: tuple[str, ...] = ()
    unsafe: bool = False  # the fix relies on a fact it cannot see (`bindings`): never safe


@dataclass(slots=True)
class FixContext:
    lines: LineIndex
    aliases: AliasTable
    source: str
    tree: ast.Module
    # Statements some finding's fix removes, per target value, so that a block whose statements are
    # all removed keeps a `pass` (see `remove_statement`).
    removed: dict[str, set[int]] = field(default_factory=dict)
    _bindings: Counter[str] | None = None
    _reads_indices: bool | None = None
    _slices: bool | None = None
    _tests_backend: bool | None = None
    _flow: Flow | None = None
    # Per function (by id), the line where it looks for Neuron itself, or None (`neuron_branch`).
    neuron_tests: dict[int, int | None] = field(default_factory=dict)
    asks_for_accelerator: bool | None = None  # the file tests `hasattr(torch, "accelerator")` (`old_torch_branch`)
    _functions: tuple[list[Function], list[tuple[int, int]]] | None = None
    _mentions_others: bool | None = None
    _modules: frozenset[str] | None = None
    _replaced: frozenset[str] | None = None  # the `torch.cuda` names the file assigns
    _mocks_cuda: bool | None = None
    classes_looked_up: set[str] = field(default_factory=set)

    @property
    def mentions_other_devices(self) -> bool:
        """Whether the file's text names ROCm or another vendor's device at all (`torch.version.hip`,
        `is_rocm`, `"npu"`), asked once."""
        if self._mentions_others is None:
            self._mentions_others = _OTHER_DEVICES_TEXT.search(self.source) is not None
        return self._mentions_others

    def replaced(self, qualified: str) -> bool:
        """Whether the file assigns `qualified` (`torch.cuda.is_available = lambda: True`): a read
        of it that is not a call saves CUDA's own function to put it back."""
        return qualified in self._assigned()

    def _assigned(self) -> frozenset[str]:
        if self._replaced is None:
            self._replaced = frozenset(_CUDA_ASSIGNED.findall(self.source))
        return self._replaced

    @property
    def mocks_cuda(self) -> bool:
        """Whether the file mocks the `torch.cuda` API (a test's `monkeypatch.setattr(torch.cuda,
        "is_available", lambda: True)`, a shim's assignment): its checks and expectations follow
        the mock."""
        if self._mocks_cuda is None:
            self._mocks_cuda = _CUDA_MOCK.search(self.source) is not None or bool(self._assigned())
        return self._mocks_cuda

    def rebound(self, name: str) -> bool:
        """Whether module-level code binds `name` more than once (see `bindings`)."""
        if self._bindings is None:
            from neuron_migrate.scan.fixes.bindings import module_bindings

            self._bindings = module_bindings(self.tree)
        return self._bindings[name] > 1

    @property
    def reads_device_indices(self) -> bool:
        """Whether the file takes a device string or device apart (`dev.split(":")`, `dev.index`):
        there a `"cuda:0"` that becomes the bare `"neuron"` may lose an index the code reads."""
        if self._reads_indices is None:
            from neuron_migrate.scan.fixes.device import reads_device_indices

            self._reads_indices = reads_device_indices(self.tree, self.source)
        return self._reads_indices

    @property
    def slices_device_strings(self) -> bool:
        """Whether the file cuts a device string by position (`self.device[:4]`), asked once."""
        if self._slices is None:
            from neuron_migrate.scan.fixes.device import slices_device_strings

            self._slices = slices_device_strings(self.source)
        return self._slices

    @property
    def tests_backend(self) -> bool:
        """Whether the file tests the process-group backend by name (`get_backend()`,
        `Backend.NCCL`), asked once."""
        if self._tests_backend is None:
            from neuron_migrate.scan.fixes.device import tests_backend

            self._tests_backend = tests_backend(self.source)
        return self._tests_backend

    @property
    def flow(self) -> Flow:
        """Where values go in this file (`flow`), built on first use."""
        if self._flow is None:
            self._flow = Flow(self.tree)
        return self._flow

    @property
    def looked_up(self) -> set[str]:
        """The names the fixes looked for in the whole file: the flow's, if a fix asked it
        anything, the words of a device index read (`dev.split(":")`, `dev.index`) if a fix
        asked for one and the file showed none, and the classes `module_class` did not find."""
        from neuron_migrate.scan.fixes.device import INDEX_READS

        names = set(self._flow.looked_up) if self._flow is not None else set()
        if self._reads_indices is False:
            names |= INDEX_READS
        return names | self.classes_looked_up

    def module_class(self, name: str) -> bool:
        """Whether the file defines a class `name` that is a torch module: a subclass of one of
        `torch.nn`'s classes, or of such a class of its own (f5-tts's `VocosVocoder(nn.Module)`)."""
        if self._modules is None:
            self._modules = _module_classes(self.tree, self.aliases)
        if name in self._modules:
            return True  # (more of the file, if some was left out, can only add module classes)
        self.classes_looked_up.add(name)
        return False

    def function_of(self, node: ast.AST) -> Function | None:
        """The function (not a lambda) whose body holds `node`, if any; its decorators and
        defaults are the enclosing scope's."""
        if self._functions is None:
            found = functions(self.tree)
            self._functions = (found, [(fn.lineno, fn.col_offset) for fn in found])
        return innermost(*self._functions, node)

    def span(self, node: ast.AST) -> Span:
        return self.lines.span(node)

    def text(self, node: ast.AST) -> str:
        return self.lines.node_text(node)

    def spelled(self, qualified: str, at: ast.AST | None = None) -> tuple[str, tuple[str, ...]]:
        """`qualified` as this file can write it, and the import that makes it work, if any.
        `at`: the expression replaced; the name its chain starts from, where it stands for the
        same top-level module, is the one bound there (a function's own `import torch as _torch`,
        which the file-wide table may know under another name)."""
        top, dot, rest = qualified.partition(".")
        while at.__class__ is ast.Attribute:
            at = at.value  # type: ignore[union-attr]
        if at.__class__ is ast.Name and self.aliases.names.get(at.id) == top:  # type: ignore[union-attr]
            return at.id + dot + rest, ()  # type: ignore[union-attr]
        text, needs_import = self.aliases.spelling(qualified)
        if not needs_import and not self._visible(text.partition(".")[0], at):
            # (sktime's `empty_cache()` in a method, `import torch` only in another: written as
            # `torch.neuron.empty_cache()` there, it needs the module's own import)
            return qualified, (f"import {top}",)
        return text, ((f"import {qualified.partition('.')[0]}",) if needs_import else ())

    def imported_at_top(self, top: str) -> bool:
        """Whether a statement of the module itself (not a function's, not one in an `if` or
        `try`) imports `top` or a module under it: adding `import top` then adds no dependency."""
        def under(module: str | None) -> bool:
            return module is not None and (module == top or module.startswith(top + "."))
        return any(n.__class__ is ast.Import and any(under(a.name) for a in n.names)  # type: ignore[attr-defined]
                   or n.__class__ is ast.ImportFrom and not n.level and under(n.module)  # type: ignore[attr-defined]
                   for n in self.tree.body)

    def _visible(self, local: str, at: ast.AST | None) -> bool:
        """Whether the binding `local` stands for is in scope at `at`: the module's, or one the
        function around `at` makes itself."""
        module = self.aliases.module
        if module is None or local not in self.aliases.names or module.get(local) == self.aliases.names[local]:
            return True
        function = self.function_of(at) if at is not None else None
        return function is not None and any(
            n.__class__ in (ast.Import, ast.ImportFrom) and any((a.asname or a.name.partition(".")[0]) == local for a in n.names)  # type: ignore[attr-defined]
            for n in walk(function))

    # -- edit builders --

    def replace(self, node: ast.AST, text: str) -> Edit:
        return Edit(self.span(node), text)

    def insert_before(self, node: ast.AST, text: str) -> Edit:
        s = self.span(node)
        return Edit(Span(s.line, s.col, s.line, s.col), text)

    def insert_after(self, node: ast.AST, text: str) -> Edit:
        s = self.span(node)
        return Edit(Span(s.end_line, s.end_col, s.end_line, s.end_col), text)

    def string_parts(self, literal: ast.AST) -> tuple[Span, str, str] | None:
        """(span of the literal, its prefix letters, its quote) when the node is one plain string
        literal (not an implicit concatenation)."""
        span = self.span(literal)
        first = self.lines.line(span.line)[span.col :]
        m = _STRING_START.match(first)
        if m is None:
            return None
        return span, m.group(1), m.group(2)

    def token_edit(self, literal: ast.AST, token: str, new: str) -> Edit | None:
        """Replace `token` at the start of a string literal's contents (`"cuda:0"` -> `"neuron:0"`)."""
        parts = self.string_parts(literal)
        if parts is None or not token:
            return None
        span, prefix, quote = parts
        start = span.col + len(prefix) + len(quote)
        if not self.lines.line(span.line).startswith(token, start):
            return None
        return Edit(Span(span.line, start, span.line, start + len(token)), new)

    def call_end_inside(self, call: ast.Call) -> Span:
        """An empty span just before the closing parenthesis of `call`."""
        s = self.span(call)
        return Span(s.end_line, s.end_col - 1, s.end_line, s.end_col - 1)


def _module_classes(tree: ast.Module, aliases: AliasTable) -> frozenset[str]:
    """The names of the file's classes that subclass a `torch.nn` class, directly or through
    each other."""
    bases = {node.name: node.bases for node in ast.walk(tree) if node.__class__ is ast.ClassDef}  # type: ignore[attr-defined]
    found: set[str] = set()
    grew = True
    while grew:
        grew = False
        for name, of in bases.items():
            if name not in found and any(
                    (b.__class__ is ast.Name and b.id in found)  # type: ignore[attr-defined]
                    or (aliases.qualified(b) or "").startswith("torch.nn.") for b in of):
                found.add(name)
                grew = True
    return frozenset(found)
