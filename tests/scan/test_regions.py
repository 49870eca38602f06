"""Parsing only the regions that can hold a finding (`scan.regions`) must give the findings of the
whole file: each case is analysed both ways and compared field by field, and the cases check that
regions were really left out (or, where the split cannot be trusted, that the file was parsed
whole)."""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from neuron_migrate.findings import Finding, FixClass
from neuron_migrate.ruleset.load import load_pack
from neuron_migrate.ruleset.model import RulePack
from neuron_migrate.scan import analyze, parse, regions
from neuron_migrate.scan.engine import scan_paths
from neuron_migrate.scan.regions import RegionGate, SparseTree

FILLER = "\n\n".join(f"def helper_{i}(x):\n    return x + {i}\n" for i in range(4))
# Declares an argparse option, so it is always parsed (argparse defaults are file-wide).
OPTIONS = ('def options():\n    parser = argparse.ArgumentParser()\n'
           '    parser.add_argument("--backend", default="nccl")\n    return parser.parse_args()')


@pytest.fixture(scope="module")
def pack() -> RulePack:
    return load_pack()


def sparse_tree(pack: RulePack, source: str) -> SparseTree | None:
    return analyze.compile_pack(pack).regions.parse(source, ast.parse)


def skipped_lines(pack: RulePack, source: str) -> list[int]:
    tree = sparse_tree(pack, source)
    assert tree is not None, "the file was parsed whole"
    return [r.line for r in tree._skipped]


def both(pack: RulePack, source: str, monkeypatch: pytest.MonkeyPatch) -> list[Finding]:
    """The findings with regions left out, after checking they equal the whole file's (the
    documented switch turns the partial parse off)."""
    sparse = analyze.analyze_source(source, "m.py", pack)
    with monkeypatch.context() as m:
        m.setenv(parse.ENV, "0")
        whole = analyze.analyze_source(source, "m.py", pack)
    assert sparse == whole
    return sparse


def src(text: str) -> str:
    return textwrap.dedent(text).lstrip("\n").replace("FILLER", FILLER).replace("OPTIONS", OPTIONS)


def test_functions_without_tokens_are_left_out(pack: RulePack, monkeypatch: pytest.MonkeyPatch) -> None:
    source = src("""
        import torch

        FILLER

        def to_gpu(model):
            return model.cuda()
        """)
    assert skipped_lines(pack, source) == [3, 7, 11, 15]
    assert [(f.code, f.span.line) for f in both(pack, source, monkeypatch)] == [("NM102", 20)]


def test_a_file_that_would_skip_little_is_parsed_whole(pack: RulePack, monkeypatch: pytest.MonkeyPatch) -> None:
    """Below `MIN_SKIPPED_SHARE` of the text skipped, the split costs more than it saves (the
    skipped text is still checked for syntax, the walk may send it to a second parse): the file
    is parsed whole, with the same findings."""
    body = "".join(f"    x = x.cuda({i})\n" for i in range(40))
    source = src("""
        import torch

        FILLER
        """) + f"\ndef to_gpu(x):\n{body}    return x\n"
    assert skipped_lines(pack, source) == [3, 7, 11, 15]  # the scan tests split whatever they can (conftest)
    monkeypatch.setattr(regions, "MIN_SKIPPED_SHARE", 0.3)
    assert sparse_tree(pack, source) is None
    assert len(both(pack, source, monkeypatch)) == 40


def test_a_function_given_a_deciding_table_is_read_for_its_tests(pack: RulePack, monkeypatch: pytest.MonkeyPatch) -> None:
    """diffusers' `_device_agnostic_dispatch(device, BACKEND_DEVICE_COUNT)`: the callee has no CUDA
    word, but its test `device not in dispatch_table` is fed by the tables its callers pass, which
    hold fixes; left out, the guard it makes was missed (the cache table's safe fix moves only with
    the count table's unsafe one)."""
    source = src("""
        import torch
        from .import_utils import is_torch_available

        FILLER

        if is_torch_available():
            EMPTY_CACHE = {"cuda": torch.cuda.empty_cache, "cpu": None, "mps": None, "default": None}
            DEVICE_COUNT = {"cuda": torch.cuda.device_count, "cpu": lambda: 0, "mps": lambda: 0, "default": 0}


        def _dispatch(device, table, *args):
            if device not in table:
                return table["default"](*args)
            return table[device](*args)


        def empty_cache(device):
            return _dispatch(device, EMPTY_CACHE)


        def device_count(device):
            return _dispatch(device, DEVICE_COUNT)
        """)
    found = {f.code: f for f in both(pack, source, monkeypatch) if f.fixes}
    assert {code: f.fix_class for code, f in found.items()} == {"NM207": FixClass.UNSAFE, "NM202": FixClass.UNSAFE}
    assert ("the guard at line 26 moves only with --unsafe-fixes: its test depends on `torch.cuda.device_count` "
            "(NM202, line 22)") in found["NM207"].fixes[0].title


def test_methods_are_regions_of_their_class(pack: RulePack, monkeypatch: pytest.MonkeyPatch) -> None:
    source = src("""
        import torch


        class Trainer:
            \"\"\"Trains.\"\"\"

            steps = 10

            def __init__(self, model):
                self.model = model

            @property
            def size(
                self,
            ) -> int:
                return 1

            def name(self):
                return "t"

            class Config:
                lr = 0.1

            def step(self, x):
                return self.model(x.cuda())

            def reset(self):
                self.steps = 0
        """)
    assert skipped_lines(pack, source) == [9, 12, 18, 21, 27]
    assert [(f.code, f.span.line) for f in both(pack, source, monkeypatch)] == [("NM102", 25)]


def test_members_sit_at_the_least_indentation_of_any_def_in_their_class(
        pack: RulePack, monkeypatch: pytest.MonkeyPatch) -> None:
    # The docstring's example code is deeper than the methods, and its prose line starting with
    # "class" names no class: neither is a member, and every method is one.
    source = src("""
        import torch


        class Runner:
            \"\"\"Runs a model.

            class is what this line starts with, in prose.
            A line of text at the methods' indentation.
                class Example:
                    def run(self):
                        pass
            \"\"\"

            def a(self):
                return 1

            def b(self):
                return 2

            def c(self):
                return 3

            def gpu(self, m):
                return m.cuda()
        """)
    monkeypatch.setattr(regions, "MAX_RETRIES", 0)  # no split to repair
    assert skipped_lines(pack, source) == [14, 17, 20]
    assert [(f.code, f.span.line) for f in both(pack, source, monkeypatch)] == [("NM102", 24)]


def test_column_zero_text_in_a_decorator_or_after_a_backslash_ends_no_region(
        pack: RulePack, monkeypatch: pytest.MonkeyPatch) -> None:
    # A decorator's string argument and a backslash-continued string both have text at column 0;
    # splitting there would orphan the decorator, or the string's end (a parse to repeat).
    source = src(r'''
        import torch

        FILLER

        @register(
            """Doc.
        Column-0 text.
        """,
        )
        def documented():
            return 1

        def message():
            return "one \
        two"

        def gpu(m):
            return m.cuda()
        ''')
    monkeypatch.setattr(regions, "MAX_RETRIES", 0)
    assert skipped_lines(pack, source) == [3, 7, 11, 15, 19, 27]
    assert [(f.code, f.span.line) for f in both(pack, source, monkeypatch)] == [("NM102", 32)]


def test_a_name_an_import_binds_to_a_rule_module_keeps_its_users(pack: RulePack, monkeypatch: pytest.MonkeyPatch) -> None:
    source = src("""
        import torch.cuda as tc
        from torch.cuda import synchronize as sync

        FILLER

        def wait():
            sync()

        def count():
            return tc.device_count()
        """)
    assert skipped_lines(pack, source) == [4, 8, 12, 16]
    found = both(pack, source, monkeypatch)
    # The imports spell `cuda` (NM290); the skipped functions hid nothing.
    assert [(f.code, f.span.line) for f in found] == [("NM290", 1), ("NM290", 2), ("NM206", 21), ("NM202", 24)]


def test_an_import_inside_a_function_binds_for_the_whole_file(pack: RulePack, monkeypatch: pytest.MonkeyPatch) -> None:
    source = src("""
        def setup():
            import torch.cuda as tc
            return 0

        FILLER

        def count():
            return tc.device_count()
        """)
    assert skipped_lines(pack, source) == [5, 9, 13, 17]  # not `setup`: it imports
    assert [(f.code, f.span.line) for f in both(pack, source, monkeypatch)] == [("NM290", 2), ("NM202", 22)]


def test_module_constants_and_argparse_defaults_reach_other_functions(pack: RulePack, monkeypatch: pytest.MonkeyPatch) -> None:
    source = src("""
        import argparse
        import torch
        import torch.distributed as dist

        MODE = "max-autotune"

        FILLER

        OPTIONS

        def main():
            args = options()
            dist.init_process_group(backend=args.backend)

        def build(model):
            return torch.compile(model, mode=MODE)
        """)
    # `options` declares an option: context. `main` holds `init_process_group`, and `"nccl"` is
    # in the context; `build` holds `compile`.
    assert skipped_lines(pack, source) == [7, 11, 15, 19]
    found = both(pack, source, monkeypatch)
    assert [(f.code, f.span.line) for f in found] == [
        ("NM402", 25), ("NM401", 30), ("NM501", 33), ("NM507", 33), ("NM503", 33)]


def test_a_variable_argument_belongs_to_its_own_statement(pack: RulePack) -> None:
    # Resolved after the walk, the finding once took the file's last statement as its own
    # (so a suppression comment on the call's first line missed it).
    source = src("""
        import torch.distributed as dist
        BACKEND = "nccl"


        def setup():
            dist.init_process_group(
                backend=BACKEND,
            )
            return 1


        x = 2
        """)
    (found,) = [f for f in analyze.analyze_source(source, "m.py", pack) if f.code == "NM401"]
    assert (found.span.line, found.statement_line) == (7, 6)


def test_a_region_cut_by_column_zero_docstring_text_is_parsed_after_all(pack: RulePack, monkeypatch: pytest.MonkeyPatch) -> None:
    source = src("""
        import torch

        FILLER

        def documented():
            \"\"\"Run it.

        Example: this line starts at column 0 inside the docstring
            \"\"\"
            return 1

        def to_gpu(model):
            return model.cuda()
        """)
    # `documented` ends, by the text, at the `Example:` line, with one triple quote of two: it is
    # never blanked (no parse has to fail first), and the others stay skipped.
    monkeypatch.setattr(regions, "MAX_RETRIES", 0)
    assert skipped_lines(pack, source) == [3, 7, 11, 15]
    assert [(f.code, f.span.line) for f in both(pack, source, monkeypatch)] == [("NM102", 27)]


def test_a_def_inside_a_docstring_is_not_taken_for_a_region(pack: RulePack, monkeypatch: pytest.MonkeyPatch) -> None:
    # Blanking a "region" inside a string parses, but its `pass` is no statement: it is kept.
    source = src("""
        import torch

        USAGE = \"\"\"
        def example():
            return 1
        Then call example().
        \"\"\"

        FILLER

        def to_gpu(model):
            return model.cuda()
        """)
    assert skipped_lines(pack, source) == [9, 13, 17, 21]
    assert [(f.code, f.span.line) for f in both(pack, source, monkeypatch)] == [("NM102", 26)]


def test_star_imports_are_parsed_whole(pack: RulePack, monkeypatch: pytest.MonkeyPatch) -> None:
    source = src("""
        from torch.cuda import *

        FILLER

        def wait():
            synchronize()
        """)
    assert sparse_tree(pack, source) is None
    assert [(f.code, f.span.line) for f in both(pack, source, monkeypatch)] == [("NM290", 1), ("NM206", 20)]


def test_a_star_import_the_text_scan_misses_is_caught_by_the_walk(pack: RulePack, monkeypatch: pytest.MonkeyPatch) -> None:
    source = src("""
        from torch.cuda import \\
            *

        FILLER

        def wait():
            synchronize()
        """)
    assert sparse_tree(pack, source) is not None  # the text reads no star
    assert [(f.code, f.span.line) for f in both(pack, source, monkeypatch)] == [("NM290", 1), ("NM206", 21)]


def test_a_star_import_of_a_module_no_rule_names_binds_nothing_a_rule_reads(
        pack: RulePack, monkeypatch: pytest.MonkeyPatch) -> None:
    source = src("""
        from typing import *
        from .memory import *

        FILLER

        def gpu(m):
            return m.cuda()
        """)
    assert skipped_lines(pack, source) == [4, 8, 12, 16]
    assert [(f.code, f.span.line) for f in both(pack, source, monkeypatch)] == [("NM102", 21)]


def test_a_name_is_matched_where_it_is_written_and_a_value_where_it_is_defined(
        pack: RulePack, monkeypatch: pytest.MonkeyPatch) -> None:
    # `torch.cuda.device` needs `cuda` and `device` where it is used (or in the import that binds
    # the name used there): `cuda` in the module's docstring keeps no function that only says
    # `device`. A value (`"nccl"`) may come from a module constant.
    source = src("""
        \"\"\"Training on cuda.\"\"\"
        import torch.distributed as dist

        BACKEND = "nccl"

        FILLER

        def place(x, device):
            return x.to(device)

        def setup():
            dist.init_process_group(backend=BACKEND)
        """)
    assert skipped_lines(pack, source) == [6, 10, 14, 18, 22]
    assert [(f.code, f.span.line) for f in both(pack, source, monkeypatch)] == [("NM402", 4), ("NM401", 26)]


def test_a_pattern_that_needs_only_a_value_skips_no_function(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Any call whose first argument is "cuda": the call may be in any function, the value in a
    # module constant, so nothing can be left out.
    rules = tmp_path / "rules.yaml"
    rules.write_text(textwrap.dedent("""
        rules:
          - code: NM790
            name: any-call-on-cuda
            title: Any call on cuda
            category: kernels-libraries
            severity: warning
            match:
              arguments:
                - call: ["*"]
                  position: 0
                  values: [cuda]
            fix:
              class: manual
            message: "`{symbol}` names cuda"
            why: A test rule.
            references: [https://example.com/docs]
            examples:
              invalid:
                - code: f("cuda")
              valid:
                - f("cpu")
        """), encoding="utf-8")
    pack = load_pack([rules])
    source = src("""
        DEVICE = "cuda"

        FILLER

        def place(x):
            return put(DEVICE)
        """)
    assert sparse_tree(pack, source) is None
    assert [(f.code, f.span.line) for f in both(pack, source, monkeypatch) if f.code == "NM790"] == [("NM790", 20)]


def test_a_module_root_read_in_a_skipped_region_is_seen_by_fixes(pack: RulePack, monkeypatch: pytest.MonkeyPatch) -> None:
    # `torch` is used without an import (as in a pasted snippet): a fix that spells `torch.neuron`
    # then adds no import. Whether the file reads `torch` depends on the skipped functions too.
    source = src("""
        from torch.cuda import synchronize

        FILLER

        def make():
            return torch.zeros(3)

        def wait():
            synchronize()
        """)
    assert skipped_lines(pack, source) == [3, 7, 11, 15, 19]
    (found,) = [f for f in both(pack, source, monkeypatch) if f.code == "NM206"]
    assert found.fixes and not any(fix.add_imports for fix in found.fixes)


def test_a_syntax_error_in_a_skipped_function_is_reported(pack: RulePack, monkeypatch: pytest.MonkeyPatch) -> None:
    source = src("""
        import torch

        FILLER

        def legacy():
            print "no finding can be here"

        def to_gpu(model):
            return model.cuda()
        """)
    # The text split would skip `legacy`; its syntax is checked all the same, and the error is the
    # one (and where) the whole parse reports, with the partial parse on or off.
    assert skipped_lines(pack, source) == [3, 7, 11, 15, 19]
    errors = []
    for switch in ("1", "0"):
        monkeypatch.setenv(parse.ENV, switch)
        with pytest.raises(SyntaxError) as exc:
            analyze.analyze_source(source, "m.py", pack)
        errors.append((exc.value.msg, exc.value.lineno, exc.value.offset))
    assert errors[0] == errors[1] and errors[0][1] == 20


def test_a_syntax_error_in_a_skipped_method_of_a_large_file_is_nm001(
        pack: RulePack, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Through the engine, whatever the file's size: one NM001 at the error, and the CUDA words of
    # its tokens (`scan.unparsed`), the same with the partial parse on and off.
    methods = "".join(f"    def m{i}(self, x):\n        return x * {i}\n\n" for i in range(300))
    source = ("import torch\n\n\nclass Net:\n" + methods + "    def bad(self):\n        return (1,\n\n"
              "    def gpu(self):\n        return self.cuda()\n")
    (tmp_path / "big.py").write_text(source)
    assert 905 in skipped_lines(pack, source)  # the text split leaves `bad` out
    for switch in ("1", "0"):
        monkeypatch.setenv(parse.ENV, switch)
        result = scan_paths([tmp_path], pack, use_cache=False, jobs=1)
        assert [(f.code, f.span.line) for fr in result.files for f in fr.findings] == [("NM001", 906), ("NM290", 909)]


def test_tab_indented_classes_and_crlf_free_text_split_the_same(pack: RulePack, monkeypatch: pytest.MonkeyPatch) -> None:
    methods = "".join(f"\tdef m{i}(self):\n\t\treturn {i}\n\n" for i in range(4))
    source = f"import torch\n\n\nclass Net:\n{methods}\tdef gpu(self):\n\t\treturn self.cuda()\n"
    assert skipped_lines(pack, source) == [5, 8, 11, 14]
    assert [(f.code, f.span.line) for f in both(pack, source, monkeypatch)] == [("NM102", 18)]


def test_small_files_are_parsed_whole(pack: RulePack) -> None:
    assert sparse_tree(pack, "import torch\n\ndef f(m):\n    return m.cuda()\n\ndef g():\n    return 1\n") is None


# --- generated modules: many functions, few of them with a finding --------------------------------

IMPORTS = ["import torch", "import torch.cuda as tc", "from torch.cuda import synchronize as sync",
           "import torch.distributed as dist", "import os", "import argparse", "from torch import cuda"]
BODIES = [
    "return x + 1", "y = [i for i in range(3)]\nreturn y", "return tc.device_count()", "sync()",
    "return x.cuda()", "return torch.zeros(3, device=DEVICE)", "dist.init_process_group(backend=BACKEND)",
    "return torch.compile(x, mode=MODE)", "import torch.cuda as tc\nreturn 0", "cuda.synchronize()",
    'os.environ["CUDA_VISIBLE_DEVICES"] = "0"', "return x.to(args.device)",
    'p = argparse.ArgumentParser()\np.add_argument("--device", default="cuda")\nreturn p',
    '"""Doc.\n\nExample: at column 0\n"""\nreturn 1', "return call(\n    x,\n)", "return x.double()",
    "from torch._dynamo.utils import counters\nreturn counters", "return counters", "import torch._dynamo\nreturn 0",
    "import numpy as np\nreturn np.double(x)", "return np.double(x)", "from . import tc\nreturn tc",
]
CONSTANTS = ['DEVICE = "cuda"', 'BACKEND = "nccl"', 'MODE = "max-autotune"', "DEVICE = 'cpu'"]


@st.composite
def modules(draw: st.DrawFn) -> str:
    indent = draw(st.sampled_from(["    ", "\t"]))
    lines = draw(st.lists(st.sampled_from(IMPORTS), max_size=4, unique=True))
    lines += draw(st.lists(st.sampled_from(CONSTANTS), max_size=2))
    for i in range(draw(st.integers(4, 9))):
        depth = indent if draw(st.booleans()) and i else ""
        if depth and (i == 1 or draw(st.booleans())):
            lines += ["", f"class C{i}:", f"{indent}size = 1"]
        decorator = draw(st.sampled_from(["", "@staticmethod", "@functools.wraps(\n    f,\n)"]))
        lines += [""] + [depth + part for part in decorator.split("\n") if part]
        signature = draw(st.sampled_from([f"def f{i}(x):", f"def f{i}(\n    x,\n) -> int:", f"async def f{i}(x):"]))
        lines += [depth + part if not part.startswith(" ") else depth + indent + part.strip() if part != ") -> int:" else depth + part
                  for part in signature.split("\n")]
        lines += [depth + indent + part if part and not part.startswith("Example") else part
                  for part in draw(st.sampled_from(BODIES)).split("\n")]
    return "\n".join(lines) + "\n"


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(source=modules())
def test_generated_modules_give_the_whole_files_findings(source: str) -> None:
    pack = load_pack()
    ast.parse(source)
    with pytest.MonkeyPatch.context() as m:
        sparse = analyze.analyze_source(source, "m.py", pack)
        m.setattr(RegionGate, "parse", lambda self, source, parse: None)
        whole = analyze.analyze_source(source, "m.py", pack)
    assert sparse == whole


def test_a_pattern_keeps_its_own_tokens_even_when_a_shorter_one_covers_the_file(
        pack: RulePack, monkeypatch: pytest.MonkeyPatch) -> None:
    # The file gate only needs `"nccl"` somewhere; the call to `init_process_group` below holds
    # none, its value comes from an option declared elsewhere.
    source = src("""
        import argparse
        from torch.distributed import init_process_group

        FILLER

        OPTIONS

        def main():
            args = options()
            init_process_group(backend=args.backend)
        """)
    assert skipped_lines(pack, source) == [4, 8, 12, 16]
    assert [(f.code, f.span.line) for f in both(pack, source, monkeypatch)] == [("NM402", 22), ("NM401", 27)]


LAZY = """
import torch

FILLER

def first():
    from torch._dynamo.utils import counters
    return counters["a"]

def second():
    from torch._dynamo.utils import counters
    return counters["b"]

def reload():
    import torch._dynamo
    return 0

def gpu(m):
    return m.cuda()
"""
EARLY = """
def early():
    counters.clear()
    from torch._dynamo.utils import counters
    import numpy as np
    return np
"""


def test_lazy_imports_repeated_in_each_function_do_not_keep_them(pack: RulePack, monkeypatch: pytest.MonkeyPatch) -> None:
    # `reload` rebinds `torch` as the module does; `first` and `second` each import what they read.
    source = src(LAZY)
    assert skipped_lines(pack, source) == [3, 7, 11, 15, 19, 23, 27]
    assert [(f.code, f.span.line) for f in both(pack, source, monkeypatch)] == [("NM102", 32)]


def test_a_function_reading_a_name_before_importing_it_keeps_the_other_imports(
        pack: RulePack, monkeypatch: pytest.MonkeyPatch) -> None:
    # `early` reads `counters` before its own import, so another function's import may be what it
    # reads: `first` and `second` stay. `early` itself may go: no other function reads `np`, and
    # no fix writes numpy (a module a fix writes is spelled through the file's binding of it).
    source = src(LAZY + EARLY)
    assert skipped_lines(pack, source) == [3, 7, 11, 15, 27, 34]
    assert [(f.code, f.span.line) for f in both(pack, source, monkeypatch)] == [("NM102", 32)]
    spelled = src(LAZY + EARLY.replace("import numpy as np", "import torch as np"))
    assert skipped_lines(pack, spelled) == [3, 7, 11, 15, 27]  # `np` is how a fix would spell torch
    assert [(f.code, f.span.line) for f in both(pack, source, monkeypatch)] == [("NM102", 32)]


def test_comment_lines_neither_keep_nor_force_a_function(pack: RulePack, monkeypatch: pytest.MonkeyPatch) -> None:
    source = src("""
        import torch

        FILLER

        def note(x):
            # on cuda this would need x.cuda(); import it lazily
            return x

        def gpu(m):
            return m.cuda()  # a trailing comment is still read with its line
        """)
    assert skipped_lines(pack, source) == [3, 7, 11, 15, 19]
    assert [(f.code, f.span.line) for f in both(pack, source, monkeypatch)] == [("NM102", 24)]


def test_a_line_of_a_string_that_starts_with_a_hash_is_not_a_comment(pack: RulePack, monkeypatch: pytest.MonkeyPatch) -> None:
    """CUTLASS's code generator (vendored by flash-attention): generated C++ in a string whose
    last line starts with `#include` and closes the string, code following on that line."""
    source = ("import torch\n\n" + FILLER + "\n\nclass Gen:\n    def header(self):\n        code = '''\n"
              "#pragma once\n#include \"{cutlass_dir}cutlass/cutlass.h\"\\n'''.format(cutlass_dir=self.root)\n"
              "        return code\n")
    assert skipped_lines(pack, source) == [3, 7, 11, 15]
    assert [(f.code, f.span.line, f.symbol) for f in both(pack, source, monkeypatch)] == [("NM290", 23, "cutlass_dir")]


def test_a_region_cut_inside_brackets_is_parsed_after_the_parse_fails(pack: RulePack, monkeypatch: pytest.MonkeyPatch) -> None:
    source = src("""
        import torch

        FILLER

        def wrapped(x):
            return call(
        x)

        def gpu(m):
            return m.cuda()
        """)
    # By the text, `wrapped` ends where `x)` starts a line; blanked, it leaves `x)` at module level.
    assert skipped_lines(pack, source) == [3, 7, 11, 15]
    assert [(f.code, f.span.line) for f in both(pack, source, monkeypatch)] == [("NM102", 24)]
    monkeypatch.setattr(regions, "MAX_RETRIES", 0)
    assert sparse_tree(pack, source) is None


def test_import_statements_are_read_by_their_text() -> None:
    found = regions._imports(
        "import torch.cuda\nimport torch.distributed as dist\nfrom torch.cuda import (synchronize,\n"
        "    Stream as S)  # two\nfrom . import local\ndef f():\n    from m import (a,  # see (b)\n        b)\n"
        "# we import it lazily\nfrom typing import *\nfrom .memory import *\n", {"torch.cuda"})
    assert [(b.name, b.target, b.key[1]) for b in found] == [
        ("torch", "torch", "import"), ("dist", "torch.distributed", "import as"),
        ("synchronize", "torch.cuda.synchronize", "from"), ("S", "torch.cuda.Stream", "from"),
        ("local", None, "relative"), ("", None, "unread"), ("", None, "unread")]
    assert regions._imports("from torch.cuda import *\n", {"torch.cuda"}) is None
    assert regions._imports("x = 'import *'\n", {"torch.cuda"}) is None  # no module: unreadable
    # `from m \` carries the module to the `import` line: read alone, that line would bind `m`'s
    # names as top-level modules.
    carried = regions._imports("from torch.ao \\\n    import _C\n", {"torch.cuda"})
    assert [(b.name, b.key[1]) for b in carried or []] == [("", "unread")]


def test_a_named_value_used_or_tested_in_a_skipped_function_parses_the_file_whole(
        pack: RulePack, monkeypatch: pytest.MonkeyPatch) -> None:
    """A name holding an argument's value (`named`) is reported unless the file passes it to a
    matched call or tests values against it; where that happens in a function the text gate
    would skip, the file is parsed whole, so both ways agree."""
    source = src("""
        DEVICE_MAPS = ["auto", "balanced"]
        BACKEND = "inductor"

        FILLER

        def check(name):
            return name in DEVICE_MAPS

        def relay():
            return BACKEND
        """)
    found = both(pack, source, monkeypatch)
    # The list of choices is tested against: not reported; the backend leaves through `relay`.
    assert [(f.code, f.span.line) for f in found] == [("NM502", 2)]
    assert sparse_tree(pack, source) is not None  # the split itself was possible


@pytest.mark.parametrize("order", [("set", "use"), ("use", "set"), ("set", "other", "use"), ("use", "other", "set"),
                                   ("wrapped", "use"), ("other", "use")])
def test_an_attribute_set_in_one_method_reaches_an_argument_in_another(
        pack: RulePack, monkeypatch: pytest.MonkeyPatch, order: tuple[str, ...]) -> None:
    """`self.mode = "inductor"` in one method and `backend=self.mode` in another: attributes are
    file-wide, so the method that sets the value and any other that assigns the attribute decide
    the finding. The partial parse used to skip the setter (it holds no `compile`) and the user
    (the value was in no context), and lost the finding."""
    methods = {
        "set": '    def setup(self):\n        self.mode = "inductor"\n',
        "wrapped": '    def setup(self):\n        self.mode = (\n            "inductor"\n        )\n',
        "other": '    def reset(self):\n        self.mode = "eager"\n',
        "use": "    def build(self, m):\n        return torch.compile(m, backend=self.mode)\n",
    }
    source = src("import torch\n\nFILLER\n\nclass Engine:\n" + "\n".join(methods[k] for k in order))
    codes = {f.code for f in both(pack, source, monkeypatch)}
    # Each value assigned may reach the call: with "inductor" among them the backend may be Inductor.
    assert ("NM502" in codes) is ("set" in order or "wrapped" in order)


def test_a_condition_followed_into_a_skipped_caller_parses_the_file_whole(
        pack: RulePack, monkeypatch: pytest.MonkeyPatch) -> None:
    """torch's numa/binding.py: `def _get_gpu_count(): return torch.cuda.device_count()`. Whether
    its fix is safe depends on the callers (`fixes.flow`), which sit in functions without a CUDA
    word; the partial parse used to drop them and call the fix safe."""
    source = src("""
        import torch

        FILLER

        def _get_gpu_count() -> int:
            return torch.cuda.device_count()

        def report(sink):
            sink.publish(_get_gpu_count())
        """)
    found = [f for f in both(pack, source, monkeypatch) if f.code == "NM202"]
    assert [f.fix_class.value for f in found] == ["unsafe"]


@pytest.mark.parametrize(("text", "assigned"), [
    ("self.mode = 1", True), ("self.mode: str = 'a'", True), ("(self.mode) = 1", True), ("a = self.mode = 1", True),
    ("self.mode \\\n    = 1", True), ("self.mode: dict[\n    str, int] = {}", True), ("self.mode: int  # later\n", True),
    ("self.mode == 1", False), ("if self.mode:\n    pass", False), ("f(self.mode)", False), ("self.mode += 1", False),
    ("{self.mode: 1}", False), ("self.mode: int", False), ("x[self.mode:]", False),
])
def test_an_attribute_counts_as_set_where_the_text_may_assign_it(text: str, assigned: bool) -> None:
    # Counting more than the walk would see only costs a wider parse; counting less loses findings.
    pos = text.index("mode")
    assert regions._attribute(text, pos) and regions._assigned(text, pos + len("mode")) is assigned


@pytest.mark.parametrize(("text", "attribute", "or_line_start"), [
    ("x.name", True, True), ("x . name", True, True), ("f(name)", False, False),
    ("name()", False, True), ("x = (a.\n    name)", False, True),
])
def test_a_name_after_a_dot_on_its_line_is_an_attribute(text: str, attribute: bool, or_line_start: bool) -> None:
    # A word that starts its line may continue `a.` from the line before: a read, for a name; a
    # possible attribute, for an attribute assigned.
    pos = text.index("name")
    assert regions._attribute(text, pos) is attribute
    assert regions._attribute(text, pos, line_start=True) is or_line_start


def test_only_the_regions_a_walk_depended_on_are_parsed_again(pack: RulePack, monkeypatch: pytest.MonkeyPatch) -> None:
    """`pinned = torch.cuda.is_pinned`: each use of `pinned` is a finding. The function calling it
    holds no CUDA word, so the text gate skips it; the walk then finds `pinned` written there and
    that one function is parsed too, not the whole file. An attribute of the same name elsewhere
    (`x.pinned`) is no use of it."""
    source = src("""
        import torch

        pinned = torch.cuda.is_pinned

        FILLER

        def check(x):
            return pinned(x)

        def other(x):
            return x.pinned
        """)
    sparse = sparse_tree(pack, source)
    assert sparse is not None and [r.line for r in sparse._skipped] == [5, 9, 13, 17, 21, 24]
    walker = analyze._walk(analyze.compile_pack(pack), sparse.tree, source)
    hidden = parse.depends(sparse, walker.aliases, analyze.compile_pack(pack).regions, (), read=walker.assigned)
    assert hidden == {4}  # `check`; not `other`
    wider = parse.widen(sparse, hidden, source, "m.py")
    assert wider.sparse is not None and [r.line for r in wider.sparse._skipped] == [5, 9, 13, 17, 24]
    assert [(f.code, f.span.line) for f in both(pack, source, monkeypatch)] == [("NM299", 3), ("NM290", 22)]


def test_a_method_that_reads_an_attribute_without_assigning_it_stays_skipped(pack: RulePack) -> None:
    """`backend=self.mode` looks the attribute up in every method that assigns it; a method that only reads it
    (`if self.mode:`) decides nothing and is not parsed."""
    methods = ('    def setup(self):\n        self.mode = "inductor"\n\n'
               "    def show(self):\n        if self.mode:\n            print(self.mode == 'x')\n\n"
               "    def build(self, m):\n        return torch.compile(m, backend=self.mode)\n")
    source = src("import torch\n\nFILLER\n\nclass Engine:\n" + methods)
    cp = analyze.compile_pack(pack)
    sparse = sparse_tree(pack, source)
    assert sparse is not None
    walker = analyze._walk(cp, sparse.tree, source)
    assert walker.field_reads == {"mode"}
    assert parse.depends(sparse, walker.aliases, cp.regions, (), set_=walker.field_reads) == set()
    assert "NM502" in {f.code for f in analyze.analyze_source(source, "m.py", pack)}


def test_a_word_pattern_keeps_a_function_only_with_all_its_words(pack: RulePack, monkeypatch: pytest.MonkeyPatch) -> None:
    """`bits_and_bytes*` (the CUDA-word net) needs `bits` and `bytes`, in any case: a function
    that only counts `nbytes` holds neither the pattern nor anything else and is skipped; one
    naming `BitsAndBytesConfig` is parsed and reported."""
    source = src("""
        import torch

        FILLER

        def size(t):
            return t.nbytes + t.element_size()

        def quantized(model_cls):
            return model_cls(quantization=make(BitsAndBytesConfig))
        """)
    assert skipped_lines(pack, source) == [3, 7, 11, 15, 19]
    assert [(f.code, f.span.line) for f in both(pack, source, monkeypatch)] == [("NM290", 23)]


@pytest.mark.parametrize(("pattern", "words"), [
    ("cuda*", ("cuda",)), ("bits_and_bytes*", ("bits", "bytes")), ("x_formers*", ("formers",)),
    ("flash_attn*", ("flash", "attn")), ("onnxruntime_gpu", ("onnxruntime",)), ("load_in_8bit", ("bit",)),
])
def test_a_word_pattern_requires_each_of_its_words(pattern: str, words: tuple[str, ...]) -> None:
    from neuron_migrate.scan.matchers.tokens import required_words

    assert required_words(pattern) == words


def test_an_import_pattern_keeps_a_function_only_where_an_import_spells_it(
        pack: RulePack, monkeypatch: pytest.MonkeyPatch) -> None:
    """NM724's `_C` matches an import statement: a function that reads `torch._C` and imports
    something else holds both words but no such import, and is skipped. One that imports `_C`,
    also across a backslash continuation the text cannot follow, is parsed."""
    source = src("""
        import torch

        FILLER

        def tracing():
            from os import sep
            return torch._C._get_tracing_state() or sep

        def ops():
            from . import _C
            return _C

        def continued():
            from torch.ao \\
                import _C
            return _C
        """)
    assert skipped_lines(pack, source) == [3, 7, 11, 15, 19]
    assert [f.span.line for f in both(pack, source, monkeypatch) if f.code == "NM724"] == [24, 28]



def test_a_device_index_read_in_a_skipped_function_keeps_the_fix_unsafe(
        pack: RulePack, monkeypatch: pytest.MonkeyPatch) -> None:
    """sglang's utils/common.py: `torch.device("cuda", 0)` loses its index to the bare `neuron`
    only where the file takes no device apart; the function that does (`dev.split(":")`) holds no
    CUDA word, and the partial parse used to leave it out and call the fix safe."""
    source = src("""
        import torch

        FILLER

        def fabric_ready():
            return probe(torch.device("cuda", 0))

        def rank_of(dev):
            return int(str(dev).split(":")[1])
        """)
    (found,) = [f for f in both(pack, source, monkeypatch) if f.code == "NM101"]
    assert found.fix_class.value == "unsafe"
    assert 22 in skipped_lines(pack, source)  # the text gate leaves `rank_of` out; the fix reads it


def test_a_switch_given_a_variable_keeps_its_region_though_no_value_is_written(
        pack: RulePack, monkeypatch: pytest.MonkeyPatch) -> None:
    """peft's `safe_load_file(filename, device=device)`: a switch (`NM759`) matches a value that is
    no literal, so the region needs no `"cuda"` of its own to be parsed."""
    source = src("""
        from safetensors.torch import load_file as safe_load_file

        FILLER

        def load(filename, device):
            return safe_load_file(filename, device=device)
        """)
    assert [(f.code, f.span.line) for f in both(pack, source, monkeypatch)] == [("NM759", 20)]


def test_a_flag_a_fixed_check_decides_is_read_where_a_function_left_out_tests_it(
        pack: RulePack, monkeypatch: pytest.MonkeyPatch) -> None:
    """accelerate's launcher: `args.multi_gpu = True` in the branch of a `torch.cuda.device_count()
    > 1` test, and `if args.multi_gpu: multi_gpu_launcher(args)` in a function with no CUDA word,
    whose callee stays CUDA's. The text gate leaves that function out; the guard it holds keeps
    the count, so it is parsed after all."""
    source = src("""
        import torch

        FILLER

        def defaults(args):
            if torch.cuda.device_count() > 1:
                args.multi_gpu = True

        def launch_command(args):
            if args.multi_gpu and not args.cpu:
                multi_gpu_launcher(args)

        def multi_gpu_launcher(args):
            major, _ = torch.cuda.get_device_capability()
            return major
        """)
    assert 23 in skipped_lines(pack, source)  # launch_command, by its text
    (count,) = [f for f in both(pack, source, monkeypatch) if f.code == "NM202"]
    assert count.fix_class.value == "manual" and "line 24" in count.message


def test_a_module_class_of_the_file_makes_its_cuda_call_safe_with_its_methods_left_out(
        pack: RulePack, monkeypatch: pytest.MonkeyPatch) -> None:
    """f5-tts's `VocosVocoder(vocos).cuda()`: `VocosVocoder` subclasses `nn.Module` in the same
    file, so the receiver is a module and `.to("neuron")` means the same (safe, as `torch.randn(...)
    .cuda()` beside it is); another class's `.cuda()` may be its own. The classes' methods hold no
    CUDA word and are left out; their headers, which the fix reads, are context."""
    source = src("""
        import torch
        from torch import nn

        FILLER

        class Vocoder(nn.Module):
            def forward(self, mel):
                return mel

        class Config:
            def forward(self, mel):
                return mel

        def export(vocos):
            return Vocoder().cuda(), Config().cuda(), torch.randn(1, 100, 20).cuda()
        """)
    assert {21, 25} <= set(skipped_lines(pack, source))
    found = [f.fix_class.value for f in both(pack, source, monkeypatch) if f.code == "NM102"]
    assert found == ["safe", "unsafe", "safe"]
