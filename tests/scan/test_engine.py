"""The scan engine: discovery, the cache, the process pool, the prefilter, directives, rows."""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path

import pytest

from neuron_migrate.findings import Edit, Finding, Fix, FixClass, Severity, Span, Target
from neuron_migrate.ruleset.load import load_pack
from neuron_migrate.scan import analyze, engine
from neuron_migrate.scan.cache import CACHE_DIR_NAME, ENV_CACHE_DIR, FINDING_ROW, FIX_ROW, valid_finding_row
from neuron_migrate.scan.directives import find_directives
from neuron_migrate.scan.prefilter import build_prefilter
from neuron_migrate.scan.result import Directive, ScanResult
from neuron_migrate.scan.rows import _CONVERT, FINDING_FIELDS, FIX_FIELDS, finding_to_row, row_to_finding

CUDA = "import torch\n\ntorch.cuda.synchronize()\nx = torch.cuda.device_count()\n"
PLAIN = "import os\n\nprint(os.getcwd())\n"


@pytest.fixture(scope="module")
def pack():
    return load_pack()


class Counting:
    """The real analyser, recording which files it was asked to parse (single process only)."""

    def __init__(self, fail_on: str | None = None) -> None:
        self.sources: list[str] = []
        self.file_paths: list[str] = []
        self.fail_on = fail_on

    def analyze_source(self, source, path, pack, *, cell=None, prelude=""):
        self.sources.append(path)
        if path == self.fail_on:
            raise RuntimeError("analyser bug")
        return analyze.analyze_source(source, path, pack, cell=cell)

    def analyze_file_path(self, path, pack):
        self.file_paths.append(path)
        return analyze.analyze_file_path(path, pack)


def _tree(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def _dump(result: ScanResult) -> str:
    """What an emitter would see: every finding and directive, serialised."""
    return json.dumps([[fr.path, [f.to_dict() for f in fr.findings], [list(dataclasses.astuple(d)) for d in fr.directives]]
                       for fr in result.files], sort_keys=True)


# -- cache -------------------------------------------------------------------------------------

def test_cache_hit_serves_results_without_parsing(tmp_path, pack):
    _tree(tmp_path, {"a.py": CUDA, "pkg/b.py": CUDA + "# neuron-migrate: ignore[NM206]\n"})
    cold = Counting()
    first = engine.scan_paths([tmp_path], pack, jobs=1, analyzer=cold)
    assert sorted(cold.sources) == ["a.py", "pkg/b.py"]
    assert (tmp_path / CACHE_DIR_NAME / ".gitignore").read_text().splitlines()[-1] == "*"
    warm = Counting()
    second = engine.scan_paths([tmp_path], pack, jobs=1, analyzer=warm)
    assert warm.sources == []
    assert _dump(second) == _dump(first)
    assert sum(len(fr.findings) for fr in second.files) == 4
    assert second.files[1].directives == [Directive(5, ("NM206",), None)]


def test_cache_invalidated_by_an_edit(tmp_path, pack):
    _tree(tmp_path, {"a.py": CUDA, "b.py": CUDA})
    engine.scan_paths([tmp_path], pack, jobs=1, analyzer=Counting())
    (tmp_path / "a.py").write_text(CUDA + "torch.cuda.empty_cache()\n")
    same_size = tmp_path / "b.py"
    same_size.write_text(CUDA.replace("cuda.synchronize", "cudx.synchronize"))
    os.utime(same_size, ns=(same_size.stat().st_atime_ns, same_size.stat().st_mtime_ns + 10_000_000))
    counting = Counting()
    result = engine.scan_paths([tmp_path], pack, jobs=1, analyzer=counting)
    assert sorted(counting.sources) == ["a.py", "b.py"]
    assert [len(fr.findings) for fr in result.files] == [3, 1]


def test_cache_invalidated_by_a_new_pack(tmp_path, pack):
    _tree(tmp_path, {"a.py": CUDA})
    engine.scan_paths([tmp_path], pack, jobs=1, analyzer=Counting())
    counting = Counting()
    engine.scan_paths([tmp_path], dataclasses.replace(pack, digest="another pack"), jobs=1, analyzer=counting)
    assert counting.sources == ["a.py"]


def test_corrupt_cache_warns_and_is_rebuilt(tmp_path, pack):
    _tree(tmp_path, {"a.py": CUDA})
    clean = engine.scan_paths([tmp_path], pack, jobs=1)
    (cache_file,) = (tmp_path / CACHE_DIR_NAME).glob("scan-*")
    cache_file.write_bytes(cache_file.read_bytes()[:40])
    counting = Counting()
    rebuilt = engine.scan_paths([tmp_path], pack, jobs=1, analyzer=counting)
    assert counting.sources == ["a.py"]
    assert len(rebuilt.warnings) == 1 and "corrupt" in rebuilt.warnings[0]
    assert _dump(rebuilt) == _dump(clean)
    again = engine.scan_paths([tmp_path], pack, jobs=1)
    assert again.warnings == [] and _dump(again) == _dump(clean)


def test_no_cache_output_is_byte_identical(tmp_path, pack):
    _tree(tmp_path, {"a.py": CUDA, "bad.py": "print 'cuda'\n", "nb/x.py": PLAIN, "z.py": "# neuron-migrate: ignore\n"})
    cold = engine.scan_paths([tmp_path], pack, jobs=1)
    warm = engine.scan_paths([tmp_path], pack, jobs=1)
    uncached = engine.scan_paths([tmp_path], pack, jobs=1, use_cache=False)
    assert _dump(cold) == _dump(warm) == _dump(uncached)
    assert [fr.path for fr in uncached.files] == ["a.py", "bad.py", "nb/x.py", "z.py"]


def test_cache_prunes_entries_it_no_longer_sees(tmp_path, pack):
    _tree(tmp_path, {"a.py": CUDA, "sub/b.py": CUDA, "sub/c.py": CUDA})
    engine.scan_paths([tmp_path], pack, jobs=1)
    (tmp_path / "sub" / "c.py").unlink()
    engine.scan_paths([tmp_path / "sub"], pack, jobs=1, root=tmp_path)  # a partial scan keeps a.py
    counting = Counting()
    engine.scan_paths([tmp_path], pack, jobs=1, analyzer=counting)
    assert counting.sources == []
    (cache_file,) = (tmp_path / CACHE_DIR_NAME).glob("scan-*")
    import marshal
    assert sorted(marshal.loads(cache_file.read_bytes())[2]) == ["a.py", "sub/b.py"]


def test_cache_dir_from_the_environment(tmp_path, pack, monkeypatch):
    project = _tree(tmp_path / "project", {"a.py": CUDA})
    monkeypatch.setenv(ENV_CACHE_DIR, str(tmp_path / "elsewhere"))
    engine.scan_paths([project], pack, jobs=1)
    assert not (project / CACHE_DIR_NAME).exists()
    assert len(list((tmp_path / "elsewhere").glob("scan-*"))) == 1


def test_unwritable_cache_only_warns(tmp_path, pack):
    _tree(tmp_path, {"a.py": CUDA})
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("")
    result = engine.scan_paths([tmp_path], pack, jobs=1, cache_dir=blocker / "cache")
    assert len(result.warnings) == 1 and "cannot write the scan cache" in result.warnings[0]
    assert _dump(result) == _dump(engine.scan_paths([tmp_path], pack, use_cache=False))


# -- pool, progress, order ---------------------------------------------------------------------

def test_process_pool_matches_single_process(tmp_path, pack, monkeypatch):
    files = {f"pkg{i % 4}/m{i:02d}.py": (CUDA if i % 3 else PLAIN) * (1 + i % 5) for i in range(40)}
    files["pkg0/broken.py"] = "def f(:\n  torch.cuda.synchronize()\n"
    _tree(tmp_path, files)
    monkeypatch.setattr(engine, "POOL_MIN_BYTES", 0)
    seen: list[tuple[int, int]] = []
    pooled = engine.scan_paths([tmp_path], pack, jobs=2, use_cache=False, progress=lambda d, t: seen.append((d, t)))
    single = engine.scan_paths([tmp_path], pack, jobs=1, use_cache=False)
    assert _dump(pooled) == _dump(single)
    assert [fr.path for fr in pooled.files] == sorted(files)
    assert seen[0] == (0, 41) and seen[-1] == (41, 41)
    assert [d for d, _ in seen] == sorted(d for d, _ in seen)


def test_progress_counts_cache_hits_first(tmp_path, pack):
    _tree(tmp_path, {"a.py": CUDA, "b.py": CUDA})
    engine.scan_paths([tmp_path], pack, jobs=1)
    (tmp_path / "b.py").write_text(CUDA * 2)
    seen: list[tuple[int, int]] = []
    engine.scan_paths([tmp_path], pack, jobs=1, progress=lambda d, t: seen.append((d, t)))
    assert seen == [(1, 2), (2, 2)]


def test_analyser_bug_becomes_a_finding_and_the_scan_goes_on(tmp_path, pack):
    _tree(tmp_path, {"a.py": CUDA, "b.py": CUDA})
    result = engine.scan_paths([tmp_path], pack, jobs=1, use_cache=False, analyzer=Counting(fail_on="a.py"))
    (a, b) = result.files
    assert [f.code for f in a.findings] == ["NM003"] and "RuntimeError: analyser bug" in a.findings[0].symbol
    assert len(b.findings) == 2


# -- discovery ---------------------------------------------------------------------------------

def test_gitignore_default_excludes_and_globs(tmp_path, pack):
    _tree(tmp_path, {
        ".git/config": "", ".gitignore": "generated/\n*.gen.py\n",
        "src/a.py": CUDA, "src/x.gen.py": CUDA, "generated/g.py": CUDA,
        "src/vendor/.gitignore": "*.py\n!keep.py\n", "src/vendor/drop.py": CUDA, "src/vendor/keep.py": CUDA,
        "venv/lib.py": CUDA, "build/b.py": CUDA, "pkg.egg-info/e.py": CUDA, "node_modules/n.py": CUDA,
        "notes.txt": "cuda", "nb.ipynb": json.dumps({"cells": []}), "types.pyi": "x: int\n",
        "tests/fixtures/f.py": CUDA,
        # a source package named like a build output (mmengine's `dist`) is no build output
        "pkg/dist/__init__.py": "", "pkg/dist/utils.py": CUDA, "dist/__init__.py": "", "dist/build/b.py": CUDA,
    })
    def paths(**kw):
        return [fr.path for fr in engine.scan_paths([tmp_path], pack, use_cache=False, jobs=1, **kw).files]

    assert paths() == ["dist/__init__.py", "nb.ipynb", "pkg/dist/__init__.py", "pkg/dist/utils.py", "src/a.py",
                       "src/vendor/keep.py", "tests/fixtures/f.py", "types.pyi"]
    assert paths(exclude=["tests/fixtures", "**/dist"]) == ["nb.ipynb", "src/a.py", "src/vendor/keep.py", "types.pyi"]
    assert paths(include=["src/**"]) == ["src/a.py", "src/vendor/keep.py"]
    assert "generated/g.py" in paths(respect_gitignore=False)
    # The repository's top-level .gitignore applies when scanning a subdirectory too.
    sub = engine.scan_paths([tmp_path / "src"], pack, use_cache=False, jobs=1)
    assert [fr.path for fr in sub.files] == ["a.py", "vendor/keep.py"]


def test_explicit_file_is_scanned_whatever_its_name(tmp_path, pack, monkeypatch):
    _tree(tmp_path, {"build/script": CUDA, "ignored.py": CUDA, ".gitignore": "ignored.py\n"})
    monkeypatch.chdir(tmp_path)
    result = engine.scan_paths([Path("build/script"), Path("ignored.py")], pack, use_cache=False, jobs=1)
    assert result.root == str(tmp_path)
    assert [(fr.path, len(fr.findings)) for fr in result.files] == [("build/script", 2), ("ignored.py", 2)]


def test_an_explicit_text_file_is_read_as_requirements_not_python(tmp_path, pack):
    """An egg-info `requires.txt` named on the command line is pip's format (NM731), not Python
    with a syntax error (NM001); in a directory walk it is not a dependency file."""
    _tree(tmp_path, {"pkg.egg-info/requires.txt": "flash-attn\nnumpy\n\n[gpu]\nmegablocks\n"})
    named = engine.scan_paths([tmp_path / "pkg.egg-info/requires.txt"], pack, use_cache=False, jobs=1, root=tmp_path)
    assert [(f.span.line, f.code) for fr in named.files for f in fr.findings] == [(1, "NM731"), (5, "NM731")]


def test_scripts_without_a_suffix_are_read_by_their_shebang(tmp_path, pack):
    """catalyst's `catalyst-parallel-run` (bash) and a `bin/` Python tool are read in a directory
    scan; a Makefile or a binary is not. Named explicitly, a CI workflow's YAML is a configuration
    file and the bash script a shell script, not Python with a syntax error (NM001)."""
    _tree(tmp_path, {
        "bin/parallel-run": "#!/bin/bash\nCUDA_VISIBLE_DEVICES=$gpu \\\n  python train.py\n",
        "bin/tool": "#!/usr/bin/env python3\nimport torch\nx = torch.ones(1).cuda()\n",
        "Makefile": "all:\n\techo cuda\n",
        "bin/blob": "\x7fELF cuda",
        ".github/workflows/gpu.yml": "jobs:\n  t:\n    env:\n      device: cuda\n",
    })
    result = engine.scan_paths([tmp_path], pack, use_cache=False, jobs=1)
    assert [(fr.path, [f.code for f in fr.findings]) for fr in result.files] == [
        ("bin/parallel-run", ["NM107"]), ("bin/tool", ["NM102"])]
    named = engine.scan_paths([tmp_path / ".github/workflows/gpu.yml", tmp_path / "bin/parallel-run"], pack,
                              use_cache=False, jobs=1, root=tmp_path)
    assert [(fr.path, [f.code for f in fr.findings]) for fr in named.files] == [
        (".github/workflows/gpu.yml", ["NM109"]), ("bin/parallel-run", ["NM107"])]


def test_files_matched_by_rule_globs_go_to_the_file_level_analyser(tmp_path, pack):
    rule = next(iter(pack.rules.values()))
    kernel_rule = dataclasses.replace(rule, match=dataclasses.replace(rule.match, files=("*.kern", "csrc/*.ptx")))
    with_files = dataclasses.replace(pack, rules={**pack.rules, rule.code: kernel_rule})
    _tree(tmp_path, {"k/kernel.kern": "__global__ void f() {}\n", "csrc/h.ptx": "", "k/h.ptx": "", "a.py": PLAIN})
    counting = Counting()
    result = engine.scan_paths([tmp_path], with_files, use_cache=False, jobs=1, analyzer=counting)
    assert counting.file_paths == ["csrc/h.ptx", "k/kernel.kern"]
    assert [fr.path for fr in result.files] == ["a.py", "csrc/h.ptx", "k/kernel.kern"]


# -- prefilter ---------------------------------------------------------------------------------

def test_prefilter_passes_every_invalid_example(pack):
    gate = build_prefilter(pack)
    for rule in pack.rules.values():
        if rule.match.files and rule.match == type(rule.match)(files=rule.match.files):
            continue  # file-level rules: their examples are the flagged files' contents (*.cu)
        if (rule.match.project_modules or rule.match.extensions or rule.match.requirements
                or rule.match.config_values):
            continue  # found in every file's text, before the gate (scan.matchers.project_modules, .extensions),
            # or in dependency and configuration files, which have no gate (.requirements, .configs)
        for example in rule.invalid:
            assert gate.may_match(example.code.encode()), (rule.code, example.code)


@pytest.mark.parametrize("code", [
    "import torch as th\nth.compile(model)\n",
    "from torch import compile\nmodel = compile(model)\n",
    "import torch\n\n@torch.compile\ndef f(x):\n    return x\n",
    "import torch\nx = torch.zeros(3, dtype=torch.long)\n",
    "t = torch.empty(3, device='cuda:0')\n",
    "import torch.cuda as tc\ntc.synchronize()\n",
    "import os\nos.environ['CUDA_VISIBLE_DEVICES'] = '0'\n",
    "import torch\ntorch.backends.cudnn.benchmark = True\n",
    "def is_cuda_ok(use_cudagraphs):\n    return use_cudagraphs\n",  # CUDA words in names (NM290)
    "SOURCES = ['ops.cpp', 'ops_kernel.cu']\n",  # a CUDA source file's name
])
def test_prefilter_passes_files_that_can_match(pack, code):
    gate = build_prefilter(pack)
    assert gate.may_match(code.encode()) and gate.may_match_text(code)
    assert analyze.analyze_source(code, "t.py", pack)  # ... and that do


@pytest.mark.parametrize("code", [
    "# a longer note: where these belong\n",  # `long` (for `torch.long`) only inside other words
    "precompiled = recompile_count\n",  # `compile` only inside names
])
def test_prefilter_needs_every_token_of_a_pattern_as_a_word(pack, code):
    gate = build_prefilter(pack)
    assert any(t in code for t in gate.tokens)  # the quick any-of test alone would parse these
    assert not gate.may_match(code.encode()) and not gate.may_match_text(code)
    assert not analyze.analyze_source(code, "t.py", pack)


def test_prefilter_requirements_are_minimal(pack):
    # A requirement needing all the text of another and more adds nothing to "any met?"; an
    # argument's value counts as text like any token (where it sits matters to regions only).
    # A token with fewer word bounds is met by more files: `compile` inside `_compile_backend`
    # (a `named` value's name) does not make `torch.compile`'s whole word `compile` redundant.
    reqs = build_prefilter(pack).requirements

    def covers(a: tuple, b: tuple) -> bool:  # every file meeting `b` meets `a`
        return all(any(u.text == t.text and t.left <= u.left and t.right <= u.right for u in b) for t in a)

    assert not [(a, b) for a in reqs for b in reqs if a is not b and covers(a, b)]


def test_files_without_tokens_are_counted_but_not_parsed(tmp_path, pack):
    _tree(tmp_path, {"plain.py": PLAIN, "a.py": CUDA})
    counting = Counting()
    result = engine.scan_paths([tmp_path], pack, use_cache=False, jobs=1, analyzer=counting)
    assert counting.sources == ["a.py"]
    assert result.files_scanned == 2 and [fr.path for fr in result.files] == ["a.py", "plain.py"]


# -- directives and rows -----------------------------------------------------------------------

def test_directives():
    text = ("x = 1  # neuron-migrate: ignore\n"
            "y = 2  #neuron-migrate: ignore[nm101, NM2]\n"
            "z = 3  # neuron-migrate: ignore[]\n"
            "w = 4  # neuron-migrate: ignored\n")
    assert find_directives(text, cell=2) == [Directive(1, None, 2), Directive(2, ("NM101", "NM2"), 2),
                                             Directive(3, (), 2, "`ignore[]` names no code")]
    assert find_directives("# nothing here\n") == []


def test_rows_round_trip_every_field():
    span = Span(3, 4, 5, 6)
    finding = Finding(
        code="NM201", severity=Severity.WARNING, fix_class=FixClass.UNSAFE, category="cuda-api",
        path="a/b.py", span=span, message="m", source_line="s", symbol="torch.cuda.x",
        fixes=(Fix(Target.NEURON, FixClass.UNSAFE, "t", (Edit(span, "r"),), ("import torch",), ("torch.cuda",)),),
        cell=7, statement_line=2, details={"k": [1, "v"]},
    )
    row = finding_to_row(finding)
    assert row_to_finding(row, "a/b.py") == finding
    # The row is the dataclass's fields in order, each a plain value the cache validates.
    assert len(row) == len(FINDING_FIELDS) and row[FINDING_FIELDS.index("span")] == (3, 4, 5, 6)
    assert valid_finding_row(row) and valid_finding_row(finding_to_row(dataclasses.replace(finding, fixes=(), details={})))


def test_rows_follow_the_dataclass_fields():
    # Rows are derived from the fields: a field that is not a str, an int or None needs a converter.
    plain = {"str", "int", "int | None"}
    for cls, convert, layout in ((Finding, _CONVERT[Finding], FINDING_FIELDS), (Fix, _CONVERT[Fix], FIX_FIELDS)):
        names = [f.name for f in dataclasses.fields(cls) if f.name != "path"]
        assert list(layout) == names
        assert [f.name for f in dataclasses.fields(cls) if f.name not in convert and f.type not in plain] in ([], ["path"])
    # The cache's validators unpack the same layouts; its key names them, so a new field is a miss.
    assert (FINDING_ROW, FIX_ROW) == (FINDING_FIELDS, FIX_FIELDS)


def test_ipython_lines_are_blanked_in_place():
    from neuron_migrate.scan.notebook import blank_ipython

    source = ("%load_ext autoreload\n"
              "x = ('%d'\n"
              "     % 3)\n"
              "out = !ls -la \\\n"
              "  /tmp\n"
              "for i in range(2):\n"
              "    !echo $i\n"
              "len?\n"
              "y = 1  # really?\n")
    assert blank_ipython(source).split("\n") == [
        "", "x = ('%d'", "     % 3)", "", "", "for i in range(2):", "    pass", "", "y = 1  # really?", ""]
    assert blank_ipython("%%writefile a.py\nimport torch\n") == "\n\n"


def test_a_timing_magic_s_statement_is_read_as_python_where_it_stands(pack):
    """einops' PyTorch notebook times kernels with `%timeit -n100 f(x); torch.cuda.synchronize()`:
    the statement is Python (the magic written over, columns kept); a compound one, or a magic
    with no statement, stays blank."""
    from neuron_migrate.scan.notebook import blank_ipython

    source = ("%timeit -n100 f(x); torch.cuda.synchronize()\n"
              "%time y = x.cuda()\n"
              "%time for i in range(3): x.cuda()\n"
              "%timeit -o\n"
              "for i in range(2):\n"
              "    %timeit -r 3 -n 5 g(i)\n")
    assert blank_ipython(source).split("\n") == [
        "...;          f(x); torch.cuda.synchronize()", "...;  y = x.cuda()", "", "", "for i in range(2):",
        "    ...;              g(i)", ""]
    found = analyze.analyze_source("import torch\n" + blank_ipython(source), "nb.py", pack)
    assert [(f.span.line, f.span.col, f.code) for f in found] == [(2, 20, "NM206"), (3, 12, "NM102")]


def test_gc_paused_restores_the_collector_and_cycles_built_meanwhile_are_still_collected():
    import gc

    class Node:
        pass

    assert gc.isenabled()
    with engine.gc_paused():
        assert not gc.isenabled()
        for _ in range(100):
            a, b = Node(), Node()
            a.other, b.other = b, a
    assert gc.isenabled()
    assert gc.collect() >= 200  # every pair is garbage, found by a full collection
    gc.disable()
    try:
        with engine.gc_paused():
            pass
        assert not gc.isenabled()  # a caller's choice stands
    finally:
        gc.enable()


def test_a_guard_names_the_specific_finding_it_guards_not_the_net_beside_it(tmp_path, pack):
    """CosyVoice's `assert torch.cuda.is_available(), ...` over `import tensorrt`: the CUDA-word net
    also matches the import's line until the scan keeps NM714 there, so the guard cites NM714."""
    _tree(tmp_path, {"m.py": "import torch\n\n\ndef build(onnx):\n"
                             "    assert torch.cuda.is_available(), 'tensorrt only supports gpu!'\n"
                             "    import tensorrt as trt\n    return trt.Builder(onnx)\n"})
    result = engine.scan_paths([tmp_path], pack, use_cache=False, jobs=1)
    guard = next(f for fr in result.files for f in fr.findings if f.code == "NM201")
    assert "guards `tensorrt` (NM714, line 6)" in guard.message
    assert [f.code for fr in result.files for f in fr.findings if f.span.line == 6] == ["NM714"]


def test_nbdevs_generated_symbol_index_is_not_scanned_but_a_hand_written_modidx_is(tmp_path, pack):
    index = ("# Autogenerated by nbdev\n\nd = {'syms': {'fastai.data.core': {\n"
             "    'fastai.data.core.DataLoaders.cuda': ('data.core.html#dataloaders.cuda', 'fastai/data/core.py'),\n"
             "    'fastai.torch_core.setup_cuda': ('torch_core.html#setup_cuda', 'fastai/torch_core.py')}}}\n")
    _tree(tmp_path, {"pkg/_modidx.py": index, "other/_modidx.py": CUDA})
    counting = Counting()
    result = engine.scan_paths([tmp_path], pack, jobs=1, use_cache=False, analyzer=counting)
    assert counting.sources == ["other/_modidx.py"]
    assert {fr.path for fr in result.files if fr.findings} == {"other/_modidx.py"}
