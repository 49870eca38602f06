"""Notebook rewriting: only changed cells' `source` bytes change; outputs, metadata, layout stay."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from rewrite_helpers import finding

from neuron_migrate.findings import Target
from neuron_migrate.rewrite.engine import FileStatus, rewrite_findings
from neuron_migrate.rewrite.notebook import rewrite_notebook


def _notebook(cells: list[dict], indent: int, ensure_ascii: bool) -> str:
    nb = {
        "cells": cells,
        "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3 (é)"}, "z": 1.50},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    return json.dumps(nb, indent=indent, ensure_ascii=ensure_ascii) + "\n"


def _code(source, outputs=None) -> dict:
    return {"cell_type": "code", "execution_count": 3, "id": "x", "metadata": {"tags": ["é"]},
            "outputs": outputs or [], "source": source}


CELL0 = ["%matplotlib inline\n", "import torch\n", "!nvidia-smi\n", "x = torch.ones(2)\n"]
CELL2 = ["for i in range(2):\n", "    !echo hi\n", "    y = x.to('cuda')\n", "print(y)?"]
OUTPUT = [{"output_type": "stream", "name": "stdout", "text": ["cuda ✓\n"]}]


@pytest.mark.parametrize("indent", [1, 2])
@pytest.mark.parametrize("ensure_ascii", [False, True])
def test_round_trip_changes_only_the_edited_source(indent: int, ensure_ascii: bool) -> None:
    cells = [_code(CELL0), {"cell_type": "markdown", "metadata": {}, "source": ["Use 'cuda'"]}, _code(CELL2, OUTPUT)]
    text = _notebook(cells, indent, ensure_ascii)
    cell2 = "".join(CELL2)
    f = finding(cell2, "'cuda'", "'neuron'", path="n.ipynb", cell=2)
    result = rewrite_notebook(text, [f], Target.NEURON, unsafe=False)
    assert [c.index for c in result.changes] == [2]
    cells[2]["source"] = [*CELL2[:2], "    y = x.to('neuron')\n", CELL2[3]]
    assert result.new_text == _notebook(cells, indent, ensure_ascii)


def test_string_source_and_unusual_layout_are_kept() -> None:
    text = '{"nbformat": 4, "nbformat_minor": 4, "metadata": {}, "cells": [\n' \
           '{"cell_type": "code", "source": "import torch\\nx = torch.ones(1).cuda()", "outputs": [], ' \
           '"metadata": {}, "execution_count": null},\n' \
           '  {"source": ["a = 1\\n",   "b = \'cuda\'"], "cell_type": "code", "outputs": [], "metadata": {}, "execution_count": 1}\n]}'
    c0 = "import torch\nx = torch.ones(1).cuda()"
    c1 = "a = 1\nb = 'cuda'"
    fs = [finding(c0, ".cuda()", ".to('neuron')", path="n.ipynb", cell=0),
          finding(c1, "'cuda'", "'neuron'", path="n.ipynb", cell=1)]
    result = rewrite_notebook(text, fs, Target.NEURON, unsafe=False)
    assert result.new_text == text.replace(".cuda()", ".to('neuron')").replace("b = 'cuda'", "b = 'neuron'")


def test_import_in_an_earlier_cell_is_not_added_again_and_is_kept_if_read_elsewhere() -> None:
    cells = [_code(["from torch.cuda.amp import autocast\n", "import torch\n"]),
             _code(["with autocast():\n", "    pass\n"]),
             _code(["ctx = autocast\n"])]
    text = _notebook(cells, 1, False)
    f = finding("with autocast():\n    pass\n", "autocast()", "torch.autocast('neuron')", path="n.ipynb", cell=1,
                add=("import torch",), remove=("torch.cuda.amp.autocast",))
    result = rewrite_notebook(text, [f], Target.NEURON, unsafe=False)
    assert [c.new for c in result.changes] == ["with torch.autocast('neuron'):\n    pass\n"]


def test_notebook_file_round_trip_on_disk(tmp_path: Path) -> None:
    cells = [_code(CELL0, OUTPUT), _code(CELL2)]
    text = _notebook(cells, 1, False)
    path = tmp_path / "n.ipynb"
    path.write_bytes(text.encode())
    f = finding("".join(CELL2), "'cuda'", "'neuron'", path="n.ipynb", cell=1)
    (outcome,) = rewrite_findings(tmp_path, [f], target=Target.NEURON, unsafe=False, apply=True)
    assert outcome.status is FileStatus.CHANGED
    assert "a/n.ipynb:cell[2]" in outcome.diff  # cell index 1: the second cell and "+    y = x.to('neuron')" in outcome.diff
    new = path.read_bytes()
    assert new == text.replace("x.to('cuda')", "x.to('neuron')").encode()
    # idempotent: the finding no longer matches the cell, so nothing changes
    again = rewrite_findings(tmp_path, [f], target=Target.NEURON, unsafe=False, apply=True)
    assert again[0].status is FileStatus.UNCHANGED and path.read_bytes() == new


SAMPLE = Path(__file__).parents[2] / "sample_projects" / "notebook"


@pytest.mark.skipif(not any(SAMPLE.glob("*.ipynb")), reason="no sample notebook")
def test_sample_notebook_end_to_end_keeps_everything_but_sources(tmp_path: Path) -> None:
    from neuron_migrate.api import rewrite_paths
    from neuron_migrate.config import Settings
    from neuron_migrate.rewrite.notebook import _source_spans

    (original,) = SAMPLE.glob("*.ipynb")
    work = tmp_path / original.name
    work.write_bytes(original.read_bytes())
    result = rewrite_paths([tmp_path], Settings(), apply=True, unsafe=True, allow_dirty=True,
                           target=Target.NEURON, use_cache=False)
    assert [o.status for o in result.files] == [FileStatus.CHANGED]
    old, new = original.read_text(encoding="utf-8"), work.read_text(encoding="utf-8")
    old_spans, new_spans = _source_spans(old), _source_spans(new)

    def outside(text: str, spans: dict[int, tuple[int, int]]) -> list[str]:
        pieces, pos = [], 0
        for start, end in sorted(spans.values()):
            pieces.append(text[pos:start])
            pos = end
        return [*pieces, text[pos:]]

    assert outside(old, old_spans) == outside(new, new_spans)  # outputs, metadata, layout: same bytes
    changed = {i for i in old_spans if old[slice(*old_spans[i])] != new[slice(*new_spans[i])]}
    assert changed == {f.cell for f in result.files[0].applied}
    assert all(json.loads(old)["cells"][i]["cell_type"] == "code" for i in changed)


def test_fixes_skipped_for_an_overlap_in_a_cell_are_applied_in_the_same_run(tmp_path: Path) -> None:
    """`@torch.compile(mode="max-autotune")`: NM501 and NM503 overlap; notebooks converge in one
    run as files do (issue 13), with the cell's imports from an earlier cell."""
    from neuron_migrate.api import rewrite

    cells = [_code(["import torch\n"]), _code(['@torch.compile(mode="max-autotune")\n', "def f(x):\n", "    return x\n"], OUTPUT)]
    (tmp_path / "n.ipynb").write_text(_notebook(cells, 1, False))
    result = rewrite([tmp_path], apply=True, overrides={"unsafe-fixes": True}, use_cache=False, jobs=1)
    (outcome,) = result.files
    assert sorted(f.code for f in outcome.applied) == ["NM501", "NM503"]
    assert not any("overlaps" in s.reason for s in outcome.skipped)
    cells[1]["source"] = ['@torch.compile(backend="neuron")\n', "def f(x):\n", "    return x\n"]
    assert (tmp_path / "n.ipynb").read_text() == _notebook(cells, 1, False)
    assert '+@torch.compile(backend="neuron")\n' in outcome.diff and "n.ipynb:cell[2]" in outcome.diff
    again = rewrite([tmp_path], overrides={"unsafe-fixes": True}, use_cache=False, jobs=1)
    assert not any(o.diff for o in again.files)


def test_a_timing_magic_keeps_its_magic_when_its_statement_is_fixed(tmp_path: Path) -> None:
    """einops' notebook times kernels with `%timeit -n100 f(x); torch.cuda.synchronize()`: the
    scan reads the statement as Python, and the fix edits it behind the magic, which stays."""
    from neuron_migrate.ruleset.load import load_pack
    from neuron_migrate.scan.engine import scan_paths

    cell = ["import torch\n", "x = torch.randn(4)\n", "%timeit -n100 x.sum(); torch.cuda.synchronize()\n",
            "%time for i in range(3): x.cuda()\n", "%matplotlib inline\n", "%time y = 1"]
    text = _notebook([_code(cell)], 1, False)
    (tmp_path / "n.ipynb").write_text(text)
    result = scan_paths([tmp_path], load_pack(), use_cache=False, jobs=1)
    findings = [f for fr in result.files for f in fr.findings]
    assert [(f.span.line, f.code) for f in findings] == [(3, "NM206")]
    fixed = rewrite_notebook(text, findings, Target.NEURON, unsafe=False)
    assert [c.new for c in fixed.changes] == ["".join(cell).replace("torch.cuda.synchronize", "torch.neuron.synchronize")]
