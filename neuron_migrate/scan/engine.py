"""The scan engine: list files, serve unchanged ones from the cache, analyse the rest (in a process
pool when there is enough work), and return every file's raw findings in path order.

Problems with a user's file never stop the scan: each becomes one NM0xx finding for that file
(`scan.diagnostics`). Only usage errors (a path that does not exist) raise `NeuronMigrateError`.
NM001 (syntax error) is reported for files that pass the prefilter, i.e. that could hold a
finding: files the gate rejects are never parsed, and neither are the functions of a large file
that cannot hold one (`scan.regions`).
"""

from __future__ import annotations

import gc
import importlib
import os
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Protocol

from neuron_migrate.errors import NeuronMigrateError
from neuron_migrate.findings import Finding, FixClass, Span
from neuron_migrate.ruleset.model import Rule, RulePack
from neuron_migrate.scan.cache import (
    DIRECTIVES,
    ROWS,
    Entry,
    ScanCache,
    cache_key,
    default_cache_dir,
    digest,
    file_digest,
    has_fixes,
)
from neuron_migrate.scan.diagnostics import SYNTAX_ERROR, UNREADABLE, Diagnosis, tool_finding
from neuron_migrate.scan.directives import find_directives, find_line_directives
from neuron_migrate.scan.discover import Candidate, choose_root, discover
from neuron_migrate.scan.matchers.configs import config_findings, needed_words
from neuron_migrate.scan.matchers.env_vars import EnvVarTable
from neuron_migrate.scan.matchers.extensions import build_script, declared_extensions, extension_findings
from neuron_migrate.scan.matchers.import_calls import import_call_findings
from neuron_migrate.scan.matchers.imports import ImportTable
from neuron_migrate.scan.matchers.project_modules import candidate_findings, targets, top_level
from neuron_migrate.scan.matchers.requirements import is_cog_config, is_conda_environment, requirement_findings
from neuron_migrate.scan.matchers.shell import (
    ShellRules,
    cog_run_findings,
    inline_python,
    ipython_findings,
    shell_findings,
    task_spec_findings,
)
from neuron_migrate.scan.matchers.tokens import TokenTable
from neuron_migrate.scan.notebook import code_cells, with_cells_above
from neuron_migrate.scan.prefilter import Prefilter, build_prefilter
from neuron_migrate.scan.project import ProjectFacts, conditional_codes, cuda_net, keep_rows, net_rows
from neuron_migrate.scan.result import Directive, FileResult, ScanResult
from neuron_migrate.scan.rows import FINDING_FIELDS, Row, directive_to_row, finding_to_row, row_to_directive
from neuron_migrate.scan.source import DEFAULT_MAX_FILE_SIZE, decode_source, read_bytes
from neuron_migrate.scan.unparsed import unparsed_findings

Progress = Callable[[int, int], None]
Analysed = tuple[bytes | None, tuple[Row, ...], tuple[Row, ...]]  # (content digest, finding rows, directive rows)

# Below this much source, starting worker processes costs more than it saves.
POOL_MIN_BYTES = 512 * 1024
_CHUNK_MAX_FILES = 48
_CODE_AT, _SYMBOL_AT = FINDING_FIELDS.index("code"), FINDING_FIELDS.index("symbol")
_SPAN_AT, _CELL_AT = FINDING_FIELDS.index("span"), FINDING_FIELDS.index("cell")


class Analyzer(Protocol):
    """What the engine needs from `neuron_migrate.scan.analyze` (replaceable in tests)."""

    def analyze_source(self, source: str, path: str, pack: RulePack, *, cell: int | None = None,
                       prelude: str = "") -> list[Finding]: ...

    def analyze_file_path(self, path: str, pack: RulePack) -> list[Finding]: ...


def scan_paths(
    paths: Sequence[Path],
    pack: RulePack,
    *,
    include: Sequence[str] = (),
    exclude: Sequence[str] = (),
    respect_gitignore: bool = True,
    use_cache: bool = True,
    cache_dir: Path | None = None,
    jobs: int | None = None,
    progress: Progress | None = None,
    root: Path | None = None,
    max_file_size: int = DEFAULT_MAX_FILE_SIZE,
    analyzer: Analyzer | None = None,
    cached_fixes: bool = True,
) -> ScanResult:
    """Scan files and directories; see the brief's interface 3.

    `include`/`exclude` are gitignore-style globs relative to the root (`include` keeps only the
    files it matches). `root` fixes the directory finding paths are relative to (default:
    `discover.choose_root`). `jobs` defaults to the usable CPUs; 1 forces a single process.
    `analyzer` replaces `neuron_migrate.scan.analyze` (tests, embedding). `cached_fixes=False`
    re-analyses every cached file whose findings carry fixes, so that edit text about to be
    written into sources (`rewrite`) comes from the source, never from the cache file.
    """
    started = time.perf_counter()
    checked_ns = time.time_ns()  # before any `stat`: see scan.cache on racy entries
    root_dir = choose_root(paths, root)
    file_globs = sorted({g for rule in pack.rules.values() for g in rule.match.files})
    requirement_rules = tuple(r for r in pack.rules.values() if r.match.requirements)
    config_rules = tuple(r for r in pack.rules.values() if r.match.config_values)
    env_rules = tuple(r for r in pack.rules.values() if r.match.env_vars)
    token_rules = [r for r in pack.rules.values() if r.match.tokens]
    found = discover(paths, root=root_dir, file_globs=file_globs, include=include, exclude=exclude,
                     respect_gitignore=respect_gitignore, dependencies=bool(requirement_rules),
                     configs=bool(config_rules),
                     scripts=bool(env_rules or requirement_rules or token_rules or config_rules))

    project_modules = tuple(r for r in pack.rules.values() if r.match.project_modules)
    top = top_level(root_dir) if project_modules else ()
    extension_rules = tuple(r for r in pack.rules.values() if r.match.extensions)
    extensions = _extensions(found.files, extension_rules, max_file_size)
    cache = None
    if use_cache:
        cache = ScanCache(root_dir, cache_dir or default_cache_dir(root_dir),
                          cache_key(pack.digest, max_file_size, top, extensions))
        cache.load()
    entries: dict[str, Entry] = {}
    todo: list[Candidate] = []
    for c in found.files:
        hit = None
        if cache is not None:
            hit = cache.lookup(c.rel, c.path, c.mtime_ns, c.ctime_ns, c.size, c.mode, c.inode, checked_ns)
            if hit is not None and not cached_fixes and has_fixes(hit):
                hit = None
        if hit is not None:
            entries[c.rel] = hit
        else:
            todo.append(c)

    total = len(found.files)
    advance = _progress_counter(progress, total, total - len(todo))
    if todo:  # a fully cached scan builds no gate and imports no analyser
        context = _Context(pack, build_prefilter(pack), max_file_size, analyzer, project_modules, top,
                           extension_rules if extensions else (), extensions,
                           frozenset(r.code for r in pack.rules.values() if r.match.tokens),
                           frozenset(r.code for r in pack.rules.values() if r.project == "foreign"), requirement_rules,
                           config_rules, needed_words(config_rules), _import_table(pack),
                           ShellRules(EnvVarTable(env_rules) if env_rules else None, requirement_rules,
                                      TokenTable(token_rules) if token_rules else None, config_rules))
        for c, (content, rows, drows) in zip(todo, _analyze(todo, context, jobs, advance), strict=True):
            entries[c.rel] = (c.mtime_ns, c.ctime_ns, c.size, c.mode, c.inode, content, checked_ns, rows, drows)

    project_rows = _project_filter(pack, root_dir, entries)
    files = [FileResult.from_rows(rel, project_rows(rel, entry[ROWS]), [row_to_directive(d) for d in entry[DIRECTIVES]])
             for rel, entry in entries.items()]
    files += [FileResult(rel, [problem.to_finding(pack, rel)], []) for rel, problem in found.problems]
    files.sort(key=lambda fr: fr.path)

    warnings: list[str] = []
    if cache is not None:
        stale = {rel for rel in cache.entries if rel not in entries and _in_scope(rel, found.scopes)}
        if todo or stale or cache.refreshed:
            kept = {rel: e for rel, e in cache.entries.items() if rel not in entries and rel not in stale}
            cache.save({**kept, **entries})
        warnings = cache.warnings
    return ScanResult(root=root_dir, files=files, files_scanned=len(files),
                      duration_s=time.perf_counter() - started, warnings=warnings)


def _import_table(pack: RulePack) -> ImportTable | None:
    rules = [r for r in pack.rules.values() if r.match.imports]
    return ImportTable(rules) if rules else None


def _extensions(files: Sequence[Candidate], rules: tuple[Rule, ...], max_file_size: int) -> tuple[str, ...]:
    """The compiled modules the build scripts among `files` declare with the rules' builders
    (`scan.matchers.extensions`); read before the cache is, as its key depends on them."""
    builders = frozenset(b for rule in rules for b in rule.match.extensions)
    if not builders:
        return ()
    sources = []
    packages = {}
    for c in files:
        if c.kind == "python" and build_script(c.rel):
            try:
                sources.append((c.rel, decode_source(read_bytes(c.path, c.size, max_file_size))))
            except Diagnosis:  # unreadable or too large: the analysis reports it on the file
                continue
            package = _package(Path(c.path).parent)
            if package:
                packages[c.rel] = package
    return declared_extensions(sources, builders, packages)


def _package(directory: Path) -> str:
    """`directory` as a dotted module, from the outermost package holding it ("" outside one)."""
    parts: list[str] = []
    while (directory / "__init__.py").is_file() and directory.name.isidentifier():
        parts.append(directory.name)
        if directory.parent == directory:
            break
        directory = directory.parent
    return ".".join(reversed(parts))


def _project_filter(pack: RulePack, root: str, entries: dict[str, Entry]) -> Callable[[str, tuple[Row, ...]], Sequence[Row]]:
    """A file's rows less the findings whose project fact (a rule's `project:`) does not hold
    (`scan.project`); the cache keeps every row, so a changed build file needs no re-analysis, and
    an importer's entry stays valid when the module it imports changes."""
    needs = conditional_codes(pack)
    if not needs:
        return lambda rel, rows: rows
    kernel_codes = frozenset(c for rule in pack.rules.values() for c in rule.match.project_modules)

    importer_codes = frozenset(rule.code for rule in pack.rules.values() if rule.match.project_modules)

    def kernel_modules() -> set[str]:
        """The files where a `project_modules` rule reports (its own project fact holding), and the
        packages whose `__init__.py` imports one of them (fairseq's `dynamicconv_layer/__init__.py`:
        `from .dynamicconv_layer import DynamicconvLayer`), which an import of the package loads.
        One step only: a package that gathers such packages is not one (most of a project would be)."""
        found = {rel for rel, entry in entries.items()
                 if any(row[_CODE_AT] in kernel_codes
                        and (row[_CODE_AT] not in needs or facts.holds(needs[row[_CODE_AT]], rel, row[_SYMBOL_AT]))
                        for row in entry[ROWS])}
        return found | {rel for rel, entry in entries.items() if rel.rpartition("/")[2] == "__init__.py"
                        and any(row[_CODE_AT] in importer_codes
                                and any(t != rel and t in found for t in targets(rel, row[_SYMBOL_AT], facts.is_package))
                                for row in entry[ROWS])}

    facts = ProjectFacts(root, kernel_modules)
    has_word, net_codes = cuda_net(pack)

    def rows_of(rel: str, rows: tuple[Row, ...]) -> Sequence[Row]:
        kept = keep_rows(rows, rel, facts, needs, _CODE_AT, _SYMBOL_AT) if rows else None
        out = rows if kept is None else kept
        if not net_codes or not out:
            return out
        return net_rows(rows, out, needs, has_word, net_codes, (_CODE_AT, _SYMBOL_AT, _SPAN_AT, _CELL_AT))
    return rows_of


def _in_scope(rel: str, scopes: Sequence[str]) -> bool:
    """Whether this scan would have listed `rel` had it still existed (so its entry is stale)."""
    return any(rel == scope or scope == "" or rel.startswith(scope + "/") for scope in scopes)


def _progress_counter(progress: Progress | None, total: int, done: int) -> Callable[[int], None]:
    count = done
    if progress is not None:
        progress(done, total)

    def advance(n: int) -> None:
        nonlocal count
        count += n
        if progress is not None:
            progress(count, total)

    return advance


# -- analysis: the same code runs in-process and in pool workers ---------------------------------

@dataclass(slots=True)
class _Context:
    pack: RulePack
    prefilter: Prefilter
    max_file_size: int
    analyzer: Analyzer | None  # None: neuron_migrate.scan.analyze, imported where it runs
    project_modules: tuple[Rule, ...] = ()  # `match.project_modules` rules: every file's own-module imports
    top_level: tuple[str, ...] = ()  # the project's top-level packages and modules (their imports are its own)
    extension_rules: tuple[Rule, ...] = ()  # `match.extensions` rules, when the build declares any module
    extensions: tuple[str, ...] = ()  # the compiled modules the project's build scripts declare
    token_codes: frozenset[str] = frozenset()  # `match.tokens` rules, not repeated on an extension import's line
    foreign_codes: frozenset[str] = frozenset()  # rules about a library the file uses, not the project's own module
    requirement_rules: tuple[Rule, ...] = ()  # `match.requirements` rules: the dependency files' findings
    config_rules: tuple[Rule, ...] = ()  # `match.config_values` rules: the YAML configuration files' findings
    config_words: tuple[str, ...] = ()  # words a configuration file must hold for one of them to match
    import_table: ImportTable | None = None  # `match.imports` rules, for modules imported by a call
    shell: ShellRules = ShellRules(None, (), None)  # for shell scripts and a notebook's magics


_WORKER: _Context | None = None


def _analyze(todo: list[Candidate], context: _Context, jobs: int | None,
             advance: Callable[[int], None]) -> list[Analysed]:
    """Results in the order of `todo`."""
    workers = jobs if jobs is not None else _usable_cpus()
    if workers <= 1 or len(todo) < 2 or sum(c.size for c in todo) < POOL_MIN_BYTES:
        out = []
        with gc_paused():
            for c in todo:
                out.append(analyze_file(c, context))
                advance(1)
        return out
    import concurrent.futures as cf  # only when there is enough work for a pool
    import multiprocessing

    # fork starts workers in milliseconds and shares the loaded pack; elsewhere keep the default.
    mp_context = multiprocessing.get_context("fork") if sys.platform == "linux" else None
    chunks = _chunks(todo, workers)
    results: dict[int, Analysed] = {}
    try:
        with cf.ProcessPoolExecutor(max_workers=min(workers, len(chunks)), mp_context=mp_context,
                                    initializer=_init_worker, initargs=(context,)) as pool:
            futures = {pool.submit(_analyze_chunk, [c for _, c in chunk]): chunk for chunk in chunks}
            for future in cf.as_completed(futures):
                chunk = futures[future]
                for (index, _), result in zip(chunk, future.result(), strict=True):
                    results[index] = result
                advance(len(chunk))
    except cf.BrokenExecutor as exc:  # a worker was killed (out of memory, a signal)
        raise NeuronMigrateError(f"a scan worker process died unexpectedly ({exc}); retry with --jobs 1") from None
    return [results[i] for i in range(len(todo))]


def _chunks(todo: list[Candidate], workers: int) -> list[list[tuple[int, Candidate]]]:
    """Biggest files first, in chunks of similar size, so workers finish together."""
    order = sorted(enumerate(todo), key=lambda ic: -ic[1].size)
    target = max(sum(c.size for c in todo) // (workers * 8), 64 * 1024)
    chunks: list[list[tuple[int, Candidate]]] = []
    current: list[tuple[int, Candidate]] = []
    size = 0
    for item in order:
        current.append(item)
        size += item[1].size
        if size >= target or len(current) >= _CHUNK_MAX_FILES:
            chunks.append(current)
            current, size = [], 0
    if current:
        chunks.append(current)
    return chunks


def _init_worker(context: _Context) -> None:
    global _WORKER
    _WORKER = context
    # Syntax trees are acyclic: reference counting frees them, and the cyclic collector only
    # re-walks every live node (measured: ~20% of a cold scan). Workers are short-lived.
    gc.freeze()
    gc.disable()


@contextmanager
def gc_paused() -> Iterator[None]:
    """The cyclic collector off for a block that builds many objects and no garbage cycles (syntax
    trees, findings, report rows): each collection re-walks every live object, and a scan keeps
    tens of thousands of findings alive (measured: 0.38 s of a cold CLI scan of torch).

    On the way out the objects built meanwhile join the oldest generation untraversed (freeze, then
    unfreeze): left young, the first allocation after `enable` walked all of them at once (measured:
    a repeat `api.scan` of torch in one process, 0.32 s -> 0.19 s; a fresh process showed no
    difference). Garbage cycles among them are still collected, by the next full collection."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.freeze()
            gc.unfreeze()
            gc.enable()


def _analyze_chunk(chunk: list[Candidate]) -> list[Analysed]:
    assert _WORKER is not None
    return [analyze_file(c, _WORKER) for c in chunk]


def analyze_file(c: Candidate, ctx: _Context) -> Analysed:
    """One file's content digest (None if unread), raw findings and directives, as rows. Never raises."""
    findings: list[Finding] = []
    directives: list[Directive] = []
    content: bytes | None = None
    analyzer = ctx.analyzer or _default_analyzer()
    try:
        if c.file_level:
            findings += analyzer.analyze_file_path(c.rel, ctx.pack)
            if c.kind == "other" and c.size <= ctx.max_file_size:
                content = file_digest(c.path, c.size)
        if c.kind == "python":
            data = read_bytes(c.path, c.size, ctx.max_file_size)
            content = digest(data)
            text = decode_source(data)
            directives = find_directives(text)
            if ctx.prefilter.may_match(data) and not _nbdev_index(c.rel, text):
                findings += _analyze_text(analyzer, text, c.rel, ctx.pack, None, words=ctx.shell.commands)
            if ctx.project_modules:  # an importer needs no CUDA word of its own
                findings += candidate_findings(text, c.rel, ctx.project_modules, ctx.top_level)
            if ctx.extension_rules:  # nor does an import of the project's compiled CUDA extension
                findings = _own_extensions(_with_imports(findings, extension_findings(
                    text, c.rel, ctx.extension_rules, ctx.extensions), ctx.token_codes), ctx)
            if ctx.import_table is not None:  # `importlib.import_module("cupy")`, wherever it is
                findings = _with_imports(findings, import_call_findings(text, c.rel, ctx.import_table),
                                            ctx.token_codes)
        elif c.kind in ("dependencies", "config", "shell"):
            if c.size > ctx.max_file_size:  # a data file, not code: past the limit it is no concern of the scan
                return content, (), ()
            data = read_bytes(c.path, c.size, ctx.max_file_size)
            content = digest(data)
            text = decode_source(data, cookie=False)
            directives = find_line_directives(text)
            if c.kind == "dependencies":
                findings += requirement_findings(text, c.rel, ctx.requirement_rules)
            elif c.kind == "config":
                findings += config_findings(text, c.rel, ctx.config_rules, ctx.config_words)
                if ctx.requirement_rules and is_conda_environment(text):  # `ffcv-conda.yml`
                    try:
                        findings += requirement_findings(text, c.rel, ctx.requirement_rules, conda=True)
                    except Diagnosis:
                        pass  # broken YAML: no concern of a configuration file's scan (config_findings)
                elif is_cog_config(c.rel):  # Replicate's build spec: its packages and its build commands
                    try:
                        findings += requirement_findings(text, c.rel, ctx.requirement_rules)
                        findings += cog_run_findings(text, c.rel, ctx.shell)
                    except Diagnosis:
                        pass
                else:  # a launch spec's commands, the environment variables a configuration sets
                    findings = _beside(findings, task_spec_findings(text, c.rel, ctx.shell), ctx.token_codes)
            else:
                findings += shell_findings(text, c.rel, ctx.shell)
                findings += _inline_python(analyzer, text, c.rel, ctx)
        elif c.kind == "notebook":
            data = read_bytes(c.path, c.size, ctx.max_file_size)
            content = digest(data)
            for cell, prelude in with_cells_above(code_cells(decode_source(data, cookie=False))):
                directives += find_directives(cell.source, cell.index)
                if ctx.prefilter.may_match_text(prelude + cell.source):
                    findings += _analyze_text(analyzer, cell.source, c.rel, ctx.pack, cell.index, prelude,
                                              ctx.shell.commands)
                if cell.ipython:
                    findings += ipython_findings(cell, c.rel, ctx.shell)
    except Diagnosis as problem:
        findings.append(problem.to_finding(ctx.pack, c.rel))
    except Exception as exc:  # noqa: BLE001 - a bug in the tool: report it on the file, keep scanning the rest
        findings.append(tool_finding(ctx.pack, UNREADABLE, c.rel,
                                     f"internal error while analysing: {type(exc).__name__}: {exc}"))
    findings.sort(key=lambda f: f.sort_key)
    return content, tuple(finding_to_row(f) for f in findings), tuple(directive_to_row(d) for d in directives)


def _nbdev_index(rel: str, text: str) -> bool:
    """nbdev's generated `_modidx.py`: a table of the package's symbols and their documentation
    pages (`'fastai.data.core.DataLoaders.cuda': ('data.core.html#dataloaders.cuda', ...)`), which
    no program runs; the symbols' own definitions are scanned where they stand."""
    return rel.rpartition("/")[2] == "_modidx.py" and text.startswith("# Autogenerated by nbdev")


def _inline_python(analyzer: Analyzer, text: str, rel: str, ctx: _Context) -> list[Finding]:
    """The findings of the Python a shell script runs with `python -c` (`NGPU=$(python -c "import
    torch; print(torch.cuda.device_count())")`), where its code stands in the script. None has a
    fix (an edit inside a shell string is no rewrite of ours), and code that does not parse as
    Python is passed over (the shell may have meant something else)."""
    lines = text.split("\n")
    found: list[Finding] = []
    for number, col, code in inline_python(text):
        if not ctx.prefilter.may_match_text(code):
            continue
        try:
            inline = analyzer.analyze_source(code, rel, ctx.pack)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            continue
        for f in inline:
            fix_class = FixClass.MANUAL if f.fix_class in (FixClass.SAFE, FixClass.UNSAFE) else f.fix_class
            found.append(replace(f, span=Span(number, col + f.span.col, number, col + f.span.end_col),
                                 source_line=lines[number - 1], fixes=(), fix_class=fix_class,
                                 statement_line=number, fingerprint=""))
    return found


def _own_extensions(findings: list[Finding], ctx: _Context) -> list[Finding]:
    """`findings` less those that take a top-level compiled module the project's build declares
    (`MultiScaleDeformableAttention`, Deformable-DETR's) for a CUDA library it uses: its import
    is the declared extension's finding, its uses are the project's own code."""
    own = {e for e in ctx.extensions if "." not in e}
    if not own:
        return findings
    return [f for f in findings if f.code not in ctx.foreign_codes or f.symbol.partition(".")[0] not in own]


def _with_imports(findings: list[Finding], imports: list[Finding], token_codes: frozenset[str]) -> list[Finding]:
    """`findings` and the `imports` found in the text (of a declared extension, of a module by
    a call), less the `tokens` findings on their lines: the CUDA-reference rule reports only on a
    line no CUDA rule reported (`scan.analyze`), as on `import flash_attn_2_cuda`."""
    if not imports:
        return findings
    lines = {f.span.line for f in imports}
    return [f for f in findings if f.code not in token_codes or f.span.line not in lines] + imports


def _beside(findings: list[Finding], more: list[Finding], token_codes: frozenset[str]) -> list[Finding]:
    """A configuration's settings (`findings`) and its shell (`more`): on a line both report, a
    variable's own rule wins over the setting (`CUDA_VISIBLE_DEVICES: "0"` under `envs:` is NM107,
    not also NM109), and a setting over a CUDA word of the shell (`env: {DEVICE: cuda}`)."""
    specific = {f.span.line for f in more if f.code not in token_codes}
    kept = [f for f in findings if f.span.line not in specific]
    lines = {f.span.line for f in kept}
    return kept + [f for f in more if f.code not in token_codes or f.span.line not in lines]


def _analyze_text(analyzer: Analyzer, text: str, rel: str, pack: RulePack, cell: int | None,
                  prelude: str = "", words: TokenTable | None = None) -> list[Finding]:
    """The findings of a file's (or a cell's) text; one that does not parse gets NM001 and the
    CUDA words its tokens hold (`words`: the `match.tokens` rules)."""
    try:
        return analyzer.analyze_source(text, rel, pack, cell=cell, prelude=prelude)
    except SyntaxError as exc:
        line = exc.lineno or 1
        col = max((exc.offset or 1) - 1, 0)
        end_line = exc.end_lineno if exc.end_lineno and exc.end_lineno >= line else line
        end_col = (exc.end_offset - 1) if exc.end_offset and exc.end_offset > 0 else None
        if end_line != line:
            end_line, end_col = line, None
        return [tool_finding(pack, SYNTAX_ERROR, rel, exc.msg, line=line, col=col, end_line=end_line,
                             end_col=end_col, source_line=_line(text, line), cell=cell),
                *(unparsed_findings(text, rel, words, cell) if words is not None else ())]
    except (ValueError, RecursionError, MemoryError) as exc:
        detail = "nested too deeply to analyse" if isinstance(exc, (RecursionError, MemoryError)) else str(exc)
        return [tool_finding(pack, SYNTAX_ERROR, rel, detail, source_line=_line(text, 1), cell=cell)]


def _line(text: str, line: int) -> str:
    lines = text.split("\n")
    return lines[line - 1] if 0 < line <= len(lines) else ""


def _default_analyzer() -> Any:
    return importlib.import_module("neuron_migrate.scan.analyze")


def _usable_cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1
