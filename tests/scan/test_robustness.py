"""Each kind of bad input gives exactly one NM0xx finding for that file, and the scan goes on to
report the findings of the good file next to it (the real analyser and the real rule pack)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from neuron_migrate.errors import NeuronMigrateError
from neuron_migrate.ruleset.load import load_pack
from neuron_migrate.scan import source as source_module
from neuron_migrate.scan.engine import scan_paths
from neuron_migrate.scan.result import ScanResult

GOOD = "import torch\n\ntorch.cuda.synchronize()\n"


@pytest.fixture(scope="module")
def pack():
    return load_pack()


def _code_of(pack, qualified_name: str) -> str:
    return next(r.code for r in pack.rules.values() if qualified_name in r.match.qualified_names)


def _scan(tree: Path, pack, **kwargs) -> ScanResult:
    (tree / "good.py").write_text(GOOD)
    kwargs.setdefault("use_cache", False)
    kwargs.setdefault("jobs", 1)
    return scan_paths([tree], pack, **kwargs)


def _by_path(result: ScanResult) -> dict:
    return {fr.path: fr.findings for fr in result.files}


def _assert_good_found(result: ScanResult, pack) -> None:
    good = _by_path(result)["good.py"]
    assert [(f.code, f.span.line, f.span.col) for f in good] == [(_code_of(pack, "torch.cuda.synchronize"), 3, 0)]


def _only_tool_finding(result: ScanResult, path: str, code: str, pack, words: tuple[int, ...] = ()):
    """The file's one NM0xx finding; `words`: the lines where a file that does not parse holds a
    CUDA word, reported beside it (`scan.unparsed`)."""
    every = _by_path(result)[path]
    findings = [f for f in every if f.code.startswith("NM0")]
    assert [f.code for f in findings] == [code], every
    assert [(f.code, f.span.line) for f in every if f not in findings] == [("NM290", line) for line in words], every
    finding = findings[0]
    rule = pack.get(code)
    if rule is not None:  # the message comes from rules/nm0-tool.yaml, filled with the detail
        assert finding.message == rule.render_message(finding.symbol)
        assert finding.severity == rule.severity
    return finding


def test_syntax_error(tmp_path, pack):
    (tmp_path / "bad.py").write_text("import torch\ndef f(:\n    torch.cuda.synchronize()\n")
    result = _scan(tmp_path, pack)
    f = _only_tool_finding(result, "bad.py", "NM001", pack, words=(3,))
    assert (f.span.line, f.source_line) == (2, "def f(:")
    _assert_good_found(result, pack)


def test_python2_print_statement(tmp_path, pack):
    (tmp_path / "py2.py").write_text('import torch\nprint "using cuda", torch.cuda.device_count()\n')
    result = _scan(tmp_path, pack)
    f = _only_tool_finding(result, "py2.py", "NM001", pack)
    assert f.span.line == 2 and "print" in f.symbol
    _assert_good_found(result, pack)


def test_undecodable_bytes(tmp_path, pack):
    (tmp_path / "latin.py").write_bytes(b"x = 'cuda'\ny = '\xff\xfe'\n")
    result = _scan(tmp_path, pack)
    f = _only_tool_finding(result, "latin.py", "NM002", pack)
    assert (f.span.line, f.span.col) == (2, 5) and "0xff" in f.symbol
    _assert_good_found(result, pack)


def test_nul_bytes(tmp_path, pack):
    (tmp_path / "binary.py").write_bytes(b"x = 1\ny = 'cuda'\0\n")
    result = _scan(tmp_path, pack)
    f = _only_tool_finding(result, "binary.py", "NM002", pack)
    assert (f.span.line, f.span.col) == (2, 10)
    _assert_good_found(result, pack)


def test_utf16_file_is_undecodable(tmp_path, pack):
    (tmp_path / "wide.py").write_bytes("x = 'cuda'\n".encode("utf-16"))
    result = _scan(tmp_path, pack)
    _only_tool_finding(result, "wide.py", "NM002", pack)
    _assert_good_found(result, pack)


def test_bom_is_not_a_column(tmp_path, pack):
    (tmp_path / "bom.py").write_bytes(b"\xef\xbb\xbfimport torch\ntorch.cuda.synchronize()\n")
    result = _scan(tmp_path, pack)
    code = _code_of(pack, "torch.cuda.synchronize")
    assert [(f.code, f.span.line, f.span.col) for f in _by_path(result)["bom.py"]] == [(code, 2, 0)]
    _assert_good_found(result, pack)


def test_crlf_line_endings(tmp_path, pack):
    (tmp_path / "crlf.py").write_bytes(b"import torch\r\n\r\nx = 1\r\ntorch.cuda.synchronize()\r\n")
    result = _scan(tmp_path, pack)
    (f,) = _by_path(result)["crlf.py"]
    assert (f.span.line, f.span.col, f.source_line) == (4, 0, "torch.cuda.synchronize()")
    _assert_good_found(result, pack)


def test_latin1_coding_cookie(tmp_path, pack):
    (tmp_path / "cookie.py").write_bytes(
        b"# -*- coding: latin-1 -*-\nimport torch\ns = '\xe9t\xe9'; torch.cuda.synchronize()\n")
    result = _scan(tmp_path, pack)
    (f,) = _by_path(result)["cookie.py"]
    # Columns count characters of the decoded text: 'été' is 5 characters wide including quotes.
    assert (f.span.line, f.span.col, f.source_line[:9]) == (3, 11, "s = 'été'")
    _assert_good_found(result, pack)


def test_unknown_coding_cookie(tmp_path, pack):
    (tmp_path / "odd.py").write_bytes(b"# coding: klingon\nx = 'cuda'\n")
    result = _scan(tmp_path, pack)
    assert _only_tool_finding(result, "odd.py", "NM002", pack).span.line == 1
    _assert_good_found(result, pack)


def test_huge_file_is_skipped_unread(tmp_path, pack):
    (tmp_path / "huge.py").write_text("x = 'cuda'\n" * 100)
    result = _scan(tmp_path, pack, max_file_size=1000)
    f = _only_tool_finding(result, "huge.py", "NM004", pack)
    assert f.span.line == 1
    _assert_good_found(result, pack)


def test_no_read_permission(tmp_path, pack, monkeypatch):
    # Tests run as root, where chmod 000 does not stop reading: make the engine's `open` refuse.
    secret = tmp_path / "secret.py"
    secret.write_text("x = 'cuda'\n")
    secret.chmod(0)
    real_open = open

    def guarded_open(file, *args, **kwargs):
        if os.path.basename(str(file)) == "secret.py":
            raise PermissionError(13, "Permission denied", str(file))
        return real_open(file, *args, **kwargs)

    monkeypatch.setattr(source_module, "open", guarded_open, raising=False)
    result = _scan(tmp_path, pack)
    assert _only_tool_finding(result, "secret.py", "NM003", pack).symbol == "permission denied"
    _assert_good_found(result, pack)


def test_directory_symlink_loop_reported_once(tmp_path, pack):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "loop").symlink_to("..", target_is_directory=True)
    (tmp_path / "pkg" / "self").symlink_to(".", target_is_directory=True)
    result = _scan(tmp_path, pack)
    assert _only_tool_finding(result, "pkg/loop", "NM003", pack).symbol.startswith("symlink loop")
    _only_tool_finding(result, "pkg/self", "NM003", pack)
    assert sorted(_by_path(result)) == ["good.py", "pkg/loop", "pkg/self"]
    _assert_good_found(result, pack)


def test_file_symlink_loop(tmp_path, pack):
    (tmp_path / "self.py").symlink_to("self.py")
    result = _scan(tmp_path, pack)
    assert _only_tool_finding(result, "self.py", "NM003", pack).symbol == "symlink loop"
    _assert_good_found(result, pack)


def test_symlinks_never_leave_the_root(tmp_path, pack):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "far.py").write_text("x = 'cuda'\n")
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "far.py").symlink_to(outside / "far.py")
    (tree / "fardir").symlink_to(outside, target_is_directory=True)
    (tree / "near.py").symlink_to("good.py")
    result = _scan(tree, pack)
    assert sorted(_by_path(result)) == ["good.py", "near.py"]
    assert _by_path(result)["near.py"] == [f.__class__(**{**_fields(f), "path": "near.py", "fingerprint": ""})
                                           for f in _by_path(result)["good.py"]]


def _fields(f) -> dict:
    return {name: getattr(f, name) for name in f.__dataclass_fields__}


def test_broken_notebook_json(tmp_path, pack):
    (tmp_path / "broken.ipynb").write_text('{"cells": [\n  {"cell_type": "code", "source": "x"\n')
    result = _scan(tmp_path, pack)
    f = _only_tool_finding(result, "broken.ipynb", "NM005", pack)
    assert f.span.line == 3 and "line 3" in f.symbol
    _assert_good_found(result, pack)


def test_notebook_without_cells_is_broken(tmp_path, pack):
    (tmp_path / "old.ipynb").write_text(json.dumps({"worksheets": [], "nbformat": 3}))
    result = _scan(tmp_path, pack)
    assert "nbformat 3" in _only_tool_finding(result, "old.ipynb", "NM005", pack).symbol
    _assert_good_found(result, pack)


def test_notebook_magics_and_cell_locations(tmp_path, pack):
    cells = [
        {"cell_type": "markdown", "metadata": {}, "source": ["# torch.cuda.synchronize()\n"]},
        {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
         "source": ["%matplotlib inline\n", "!pip install torch\n", "import torch\n",
                    "files = !ls\n", "torch.cuda.synchronize?\n", "torch.cuda.synchronize()"]},
        {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
         "source": "%%bash\necho torch.cuda.synchronize()\n"},
        {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
         "source": "%%time\nimport torch\nfor _ in range(3):\n    %time x = 1\n"
                   "torch.cuda.synchronize()  # neuron-migrate: ignore\n"},
    ]
    (tmp_path / "nb.ipynb").write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4,
                                                   "nbformat_minor": 5}))
    result = _scan(tmp_path, pack)
    code = _code_of(pack, "torch.cuda.synchronize")
    nb = next(fr for fr in result.files if fr.path == "nb.ipynb")
    assert [(f.code, f.location()) for f in nb.findings] == [
        (code, "nb.ipynb:cell[2]:6:1"), (code, "nb.ipynb:cell[4]:5:1")]  # cells 1 and 3, shown 1-based
    assert [(d.cell, d.line, d.codes) for d in nb.directives] == [(3, 5, None)]
    _assert_good_found(result, pack)


def test_a_notebook_cell_uses_the_names_earlier_cells_imported(tmp_path, pack):
    """pyannote.audio's notebooks: `from lightning import Trainer` in one cell, `Trainer(...)` in
    a later one. A cell that does not parse binds nothing; imports inside `try:` count."""
    sources = ["import bitsandbytes as bnb\ntry:\n    from torch.cuda.amp import GradScaler\nexcept ImportError:\n    pass\n",
               "import torch\nfrom apex.optimizers import FusedAdam\n",
               "def broken(:\n    import xformers as xf\n",
               "opt = bnb.optim.Adam8bit(params)\nscaler = GradScaler()\n",
               "opt = FusedAdam(params)\nxf.ops.memory_efficient_attention(q, k, v)\n"]
    cells = [{"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None, "source": s} for s in sources]
    (tmp_path / "nb.ipynb").write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    nb = next(fr for fr in _scan(tmp_path, pack).files if fr.path == "nb.ipynb")
    later = [(f.cell, f.span.line, f.symbol) for f in nb.findings if f.cell in (3, 4) and f.code != "NM290"]
    assert later == [(3, 1, "bitsandbytes.optim.Adam8bit"), (3, 2, "torch.cuda.amp.GradScaler"),
                     (4, 1, "apex.optimizers.FusedAdam")]


def test_empty_file(tmp_path, pack):
    (tmp_path / "empty.py").write_bytes(b"")
    result = _scan(tmp_path, pack)
    assert _by_path(result)["empty.py"] == [] and result.files_scanned == 2
    _assert_good_found(result, pack)


def test_directory_given_twice(tmp_path, pack):
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "more.py").write_text(GOOD)
    (tmp_path / "good.py").write_text(GOOD)
    result = scan_paths([tmp_path, tmp_path, tmp_path / "sub", tmp_path / "good.py"], pack,
                        use_cache=False, jobs=1)
    assert [fr.path for fr in result.files] == ["good.py", "sub/more.py"]
    assert result.files_scanned == 2
    assert all(len(fr.findings) == 1 for fr in result.files)


def test_nonexistent_path_is_a_usage_error(tmp_path, pack):
    with pytest.raises(NeuronMigrateError, match="no-such-dir: no such file or directory"):
        scan_paths([tmp_path / "no-such-dir"], pack, use_cache=False)
