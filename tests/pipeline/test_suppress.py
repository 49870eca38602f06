"""Inline suppressions: by code, prefix, redirect and bare; multi-line statements; notebook cells;
unused directives become NM006 findings."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from neuron_migrate.findings import Finding
from neuron_migrate.pipeline.suppress import apply_directives
from neuron_migrate.ruleset.model import RulePack
from neuron_migrate.scan.result import Directive


def test_code_on_the_flagged_line(make_finding: Callable[..., Finding], mini_pack: RulePack) -> None:
    f = make_finding("NM201", "a.py", 3)
    other = make_finding("NM101", "a.py", 3)
    out = apply_directives("a.py", [f, other], [Directive(3, ("NM201",))], mini_pack)
    assert out.kept == [other] and out.suppressed == 1 and out.unused == []


def test_bare_prefix_and_redirected_code(make_finding: Callable[..., Finding], mini_pack: RulePack) -> None:
    findings = [make_finding("NM201", "a.py", 1), make_finding("NM101", "a.py", 1),
                make_finding("NM201", "a.py", 2), make_finding("NM101", "a.py", 3)]
    directives = [Directive(1, None), Directive(2, ("NM2",)), Directive(3, ("NM199",))]  # NM199 -> NM101
    out = apply_directives("a.py", findings, directives, mini_pack)
    assert out.kept == [] and out.suppressed == 4 and out.unused == []


def test_first_line_of_a_multiline_statement(make_finding: Callable[..., Finding], mini_pack: RulePack) -> None:
    # model = Net(  # neuron-migrate: ignore[NM101]
    #     device="cuda",          <- flagged on line 6, statement starts on line 5
    # )
    f = make_finding("NM101", "a.py", 6, statement_line=5)
    out = apply_directives("a.py", [f], [Directive(5, ("NM101",))], mini_pack)
    assert out.kept == [] and out.unused == []
    # ...and a directive on an unrelated line does not reach it
    out = apply_directives("a.py", [f], [Directive(4, ("NM101",))], mini_pack)
    assert out.kept == [f] and [u.code for u in out.unused] == ["NM006"]


def test_notebook_directive_applies_only_in_its_cell(
    make_finding: Callable[..., Finding], mini_pack: RulePack
) -> None:
    in_cell_2 = make_finding("NM101", "nb.ipynb", 1, cell=2)
    in_cell_4 = make_finding("NM101", "nb.ipynb", 1, cell=4)
    out = apply_directives("nb.ipynb", [in_cell_2, in_cell_4], [Directive(1, ("NM101",), cell=2)], mini_pack)
    assert out.kept == [in_cell_4] and out.suppressed == 1 and out.unused == []


def test_unused_directives_become_nm006(make_finding: Callable[..., Finding], mini_pack: RulePack) -> None:
    f = make_finding("NM201", "a.py", 3)
    directives = [Directive(3, ("NM201", "NM701")), Directive(8, None), Directive(2, ("NM101",), cell=1)]
    out = apply_directives("a.py", [f], directives, mini_pack)
    assert out.kept == []
    assert [(u.code, u.span.line, u.cell, u.symbol) for u in out.unused] == [
        ("NM006", 3, None, "ignore[NM701]"),  # only the code that silenced nothing
        ("NM006", 8, None, "ignore"),
        ("NM006", 2, 1, "ignore[NM101]"),
    ]
    rule = mini_pack.rules["NM006"]
    assert out.unused[0].message == "`# neuron-migrate: ignore[NM701]` suppresses nothing"
    assert all(u.severity == rule.severity and u.category == "tool" for u in out.unused)


def test_no_unused_report_for_a_file_that_was_not_analysed(
    make_finding: Callable[..., Finding], mini_pack: RulePack
) -> None:
    syntax_error = make_finding("NM001", "a.py", 7)
    out = apply_directives("a.py", [syntax_error], [Directive(3, ("NM101",))], mini_pack)
    assert out.kept == [syntax_error] and out.unused == []


def test_end_to_end_with_the_real_scan(tmp_path: Path) -> None:
    """Directives found by the scan engine, statement lines from the analyzer, NM006 from the pack."""
    from neuron_migrate.config import Settings
    from neuron_migrate.pipeline.finalize import build_report
    from neuron_migrate.ruleset.load import load_pack
    from neuron_migrate.scan.engine import scan_paths

    (tmp_path / "train.py").write_text(
        "import torch\n"
        'a = torch.zeros(1).to("cuda")  # neuron-migrate: ignore[NM101]\n'
        "model = torch.nn.Linear(  # neuron-migrate: ignore[NM1]\n"
        '    2, 2, device="cuda",\n'
        ")\n"
        "torch.cuda.synchronize()  # neuron-migrate: ignore[NM101]\n"
        'b = torch.ones(1).to("cuda")\n',
        encoding="utf-8",
    )
    cell = {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None}
    (tmp_path / "nb.ipynb").write_text(json.dumps({
        "cells": [dict(cell, source=["import torch\n", 'x = torch.ones(1).to("cuda")  # neuron-migrate: ignore\n']),
                  dict(cell, source=['y = torch.ones(1).to("cuda")\n'])],
        "metadata": {}, "nbformat": 4, "nbformat_minor": 5}), encoding="utf-8")
    pack = load_pack()
    result = scan_paths([tmp_path], pack, use_cache=False, jobs=1)
    report = build_report(result, Settings(), pack)
    got = [(f.path, f.cell, f.span.line, f.code) for f in report.findings]
    assert got == [
        ("nb.ipynb", 1, 1, "NM101"),
        ("train.py", None, 6, "NM006"),  # ignore[NM101] on a line that only has NM206
        ("train.py", None, 6, "NM206"),
        ("train.py", None, 7, "NM101"),
    ]
    assert report.extras["suppressed"] == 3
    unused = report.findings[1]
    assert unused.message == pack.rules["NM006"].render_message("ignore[NM101]")


def _scan_report(tmp_path: Path, text: str, **settings: Any) -> list[tuple[int, str, str]]:
    from neuron_migrate.config import Settings
    from neuron_migrate.pipeline.finalize import build_report
    from neuron_migrate.ruleset.load import load_pack
    from neuron_migrate.scan.engine import scan_paths

    (tmp_path / "a.py").write_text(text, encoding="utf-8")
    pack = load_pack()
    report = build_report(scan_paths([tmp_path], pack, use_cache=False, jobs=1), Settings(**settings), pack)
    return [(f.span.line, f.code, f.message) for f in report.findings]


def test_ignore_all_names_every_code(tmp_path: Path) -> None:
    text = ("import torch\nx = torch.zeros(1).to('cuda').cuda()  # neuron-migrate: ignore[ALL]\n"
            "y = 1  # neuron-migrate: ignore[all]\n")
    assert [(line, code) for line, code, _ in _scan_report(tmp_path, text)] == [(3, "NM006")]


def test_an_unknown_code_is_reported_as_unknown_not_unused(tmp_path: Path) -> None:
    text = "import torch\nx = torch.zeros(1).cuda()  # neuron-migrate: ignore[NM102, NM999, XY1]\n"
    got = _scan_report(tmp_path, text)
    assert [(line, code) for line, code, _ in got] == [(2, "NM007")]  # NM102 still silences its finding
    assert "unknown codes NM999, XY1" in got[0][2]


def test_unused_suppressions_follow_the_rule_selection(tmp_path: Path) -> None:
    text = "import torch\nx = 1  # neuron-migrate: ignore[NM101]\ny = torch.zeros(1).cuda()\n"
    assert ("NM006" in {code for _, code, _ in _scan_report(tmp_path, text)})
    selected = {code for _, code, _ in _scan_report(tmp_path, text, select=("NM1",))}
    assert selected == {"NM102"}  # NM006 is a lint like any rule: not selected, not reported
    assert "NM006" in {code for _, code, _ in _scan_report(tmp_path, text, select=("NM1", "NM006"))}


def test_a_directive_inside_a_string_suppresses_nothing(tmp_path: Path) -> None:
    got = _scan_report(tmp_path, 'import torch\nx = torch.zeros(1).cuda(); s = "# neuron-migrate: ignore"\n')
    assert [(line, code) for line, code, _ in got] == [(2, "NM102")]


def test_a_directive_inside_a_docstring_is_no_unused_suppression(tmp_path: Path) -> None:
    text = ('"""Usage notes.\n\n    # neuron-migrate: ignore[NM101]\n"""\nimport torch\n'
            "torch.cuda.synchronize()  # neuron-migrate: ignore[NM206]\n")
    assert _scan_report(tmp_path, text) == []


@pytest.mark.parametrize(("comment", "problem"), [
    ("# neuron-migrate: ignore[NM102", "`[` without a closing `]`"),
    ("# neuron-migrate: ignore[]", "`ignore[]` names no code"),
    ("# neuron-migrate: ignore[ , ]", "`ignore[]` names no code"),
    ("# neuron-migrate: ignore: NM102", "codes must be in brackets"),
    ("# neuron-migrate: ignore NM102", "codes must be in brackets"),
])
def test_a_malformed_directive_is_reported_and_silences_nothing(comment: str, problem: str, tmp_path: Path) -> None:
    got = _scan_report(tmp_path, f"import torch\nx = torch.zeros(1).cuda()  {comment}\n")
    assert [(line, code) for line, code, _ in got] == [(2, "NM007"), (2, "NM102")]
    assert problem in got[0][2] and got[0][2].startswith("Malformed suppression")


def test_well_formed_directives_still_work(tmp_path: Path) -> None:
    text = ("import torch\nx = torch.zeros(1).cuda()  # neuron-migrate: ignore[NM102] -- reviewed\n"
            "y = torch.zeros(1).cuda()  # noqa: E501  # neuron-migrate: ignore\n")
    assert _scan_report(tmp_path, text) == []


def test_directives_after_a_tokenizer_error_are_still_read() -> None:
    from neuron_migrate.scan.directives import find_directives

    text = "x = 1  # neuron-migrate: ignore[NM101]\ndef f(:\n    y = (  # neuron-migrate: ignore\n"
    found = find_directives(text)
    assert [(d.line, d.codes) for d in found] == [(1, ("NM101",)), (3, None)]
