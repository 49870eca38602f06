"""apply_fixes_to_source: edits, overlaps, newlines, validation; fixes made by hand."""

from __future__ import annotations

import subprocess
import sys

from hypothesis import given, settings
from hypothesis import strategies as st
from rewrite_helpers import finding, span_of

from neuron_migrate.findings import Edit, FixClass, Target
from neuron_migrate.rewrite.apply import apply_fixes_to_source


def test_safe_fix_is_applied_and_everything_else_is_kept() -> None:
    src = "import torch\n\nx = torch.ones(2).to('cuda')  # keep me\n\t# tab comment\n"
    f = finding(src, "'cuda'", "'neuron'")
    result = apply_fixes_to_source(src, [f], Target.NEURON, unsafe=False)
    assert result.new_source == src.replace("'cuda'", "'neuron'")
    assert result.applied == (f,)
    assert result.skipped == ()


def test_unsafe_needs_opt_in_and_manual_never_applies() -> None:
    src = "torch.compile(m, mode='max-autotune')\n"
    unsafe = finding(src, "mode='max-autotune'", "backend='neuron'", code="NM501", fix_class=FixClass.UNSAFE)
    assert apply_fixes_to_source(src, [unsafe], Target.NEURON, unsafe=False).new_source == src
    assert apply_fixes_to_source(src, [unsafe], Target.NEURON, unsafe=True).new_source == "torch.compile(m, backend='neuron')\n"
    manual = finding(src, "torch.compile", "x", fix_class=FixClass.MANUAL)
    result = apply_fixes_to_source(src, [manual], Target.NEURON, unsafe=True)
    assert result.new_source == src and result.applied == ()


def test_only_the_requested_target_is_used() -> None:
    src = "torch.cuda.synchronize()\n"
    f = finding(src, "torch.cuda.synchronize", "torch.accelerator.synchronize", target=Target.ACCELERATOR)
    assert apply_fixes_to_source(src, [f], Target.NEURON, unsafe=True).new_source == src
    assert apply_fixes_to_source(src, [f], Target.ACCELERATOR, unsafe=False).new_source == "torch.accelerator.synchronize()\n"


def test_overlapping_fixes_keep_the_first_and_report_the_rest() -> None:
    src = "x.to('cuda:0')\n"
    first = finding(src, "'cuda:0'", "'neuron:0'", code="NM101")
    second = finding(src, "cuda", "neuron", code="NM102")
    result = apply_fixes_to_source(src, [second, first], Target.NEURON, unsafe=False)
    assert result.new_source == "x.to('neuron:0')\n"
    assert result.applied == (first,)
    assert len(result.skipped) == 1 and result.skipped[0].finding is second
    assert "overlaps the fix for NM101 at 1:6" in result.skipped[0].reason


def test_identical_edits_from_two_findings_apply_once() -> None:
    src = "d = 'cuda'\n"
    a = finding(src, "'cuda'", "'neuron'", code="NM101")
    b = finding(src, "'cuda'", "'neuron'", code="NM103")
    result = apply_fixes_to_source(src, [a, b], Target.NEURON, unsafe=False)
    assert result.new_source == "d = 'neuron'\n"
    assert [f.code for f in result.applied] == ["NM101", "NM103"]


def test_multi_edit_fix_is_all_or_nothing() -> None:
    src = "a = x.cuda()\nb = 'cuda'\n"
    other = finding(src, "'cuda'", "'neuron'", code="NM101")
    span2 = span_of(src, "'cuda'")
    both = finding(src, ".cuda()", ".to('neuron')", code="NM110", extra_edits=(Edit(span2, "'xla'"),))
    result = apply_fixes_to_source(src, [other, both], Target.NEURON, unsafe=False)
    # The multi-edit fix starts first, so it wins; the other is skipped, not half-applied.
    assert result.new_source == "a = x.to('neuron')\nb = 'xla'\n"
    assert [s.finding.code for s in result.skipped] == ["NM101"]


def test_multiline_edit_and_crlf_replacement_newlines() -> None:
    src = "x = f(\r\n    'cuda',\r\n)\r\ny = 1\r\n"
    f = finding(src, "f(\r\n    'cuda',\r\n)", "g(\n    'neuron',\n)")
    result = apply_fixes_to_source(src, [f], Target.NEURON, unsafe=False)
    assert result.new_source == "x = g(\r\n    'neuron',\r\n)\r\ny = 1\r\n"


def test_columns_are_characters_not_bytes() -> None:
    src = "s = 'é€'; d = 'cuda'\n"
    f = finding(src, "'cuda'", "'neuron'")
    assert f.span.col == 14  # characters; in UTF-8 bytes it would be 17
    assert apply_fixes_to_source(src, [f], Target.NEURON, unsafe=False).new_source == "s = 'é€'; d = 'neuron'\n"


def test_stale_finding_is_skipped() -> None:
    src = "x.to('cuda')\n"
    f = finding(src, "'cuda'", "'neuron'")
    changed = "y.to('cuda')\n"
    result = apply_fixes_to_source(changed, [f], Target.NEURON, unsafe=False)
    assert result.new_source == changed
    assert result.skipped[0].reason == "the file changed since it was scanned"


def test_edit_outside_the_file_is_skipped() -> None:
    src = "x = 1\n"
    f = finding(src, "1", "2")
    bad = f.fixes[0].edits[0]
    moved = type(bad)(type(bad.span)(9, 0, 9, 1), "2")
    f2 = type(f)(**{**{s: getattr(f, s) for s in f.__slots__}, "fixes": (type(f.fixes[0])(Target.NEURON, FixClass.SAFE, "t", (moved,)),), "source_line": ""})
    result = apply_fixes_to_source(src, [f2], Target.NEURON, unsafe=False)
    assert result.new_source == src and result.skipped[0].reason == "an edit lies outside the file"


def test_result_that_does_not_parse_leaves_the_file_alone() -> None:
    src = "x.to('cuda')\ny = 2\n"
    good = finding(src, "'cuda'", "'neuron'")
    bad = finding(src, "y = 2", "y = (2", code="NM999")
    result = apply_fixes_to_source(src, [good, bad], Target.NEURON, unsafe=False)
    assert result.new_source == src
    assert result.applied == ()
    assert "does not parse" in result.error
    assert {s.finding.code for s in result.skipped} == {"NM101", "NM999"}


def test_libcst_is_not_imported_without_an_applicable_fix() -> None:
    code = (
        "import sys\n"
        "from neuron_migrate.findings import FixClass, Target\n"
        "from neuron_migrate.rewrite.apply import apply_fixes_to_source\n"
        "sys.path.insert(0, 'tests/rewrite')\n"
        "from rewrite_helpers import finding\n"
        "src = 'x.to(\"cuda\")\\n'\n"
        "f = finding(src, '\"cuda\"', '\"neuron\"', fix_class=FixClass.MANUAL)\n"
        "apply_fixes_to_source(src, [f], Target.NEURON, unsafe=True)\n"
        "assert 'libcst' not in sys.modules, 'libcst imported without a fix'\n"
        "g = finding(src, '\"cuda\"', '\"neuron\"')\n"
        "apply_fixes_to_source(src, [g], Target.NEURON, unsafe=False)\n"
        "assert 'libcst' in sys.modules\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr


def test_libcst_parse_failure_leaves_the_file_alone(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import libcst

    def refuse(source: str, *args, **kwargs):  # type: ignore[no-untyped-def]
        raise libcst.ParserSyntaxError("unsupported", lines=[source], raw_line=1, raw_column=0)

    monkeypatch.setattr(libcst, "parse_module", refuse)
    src = "x.to('cuda')\n"
    result = apply_fixes_to_source(src, [finding(src, "'cuda'", "'neuron'")], Target.NEURON, unsafe=False)
    assert result.new_source == src and result.applied == ()
    assert result.error == "libcst cannot parse the rewritten code (line 1)"


def test_each_fixed_file_is_parsed_once_with_libcst(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import libcst

    calls = []
    real = libcst.parse_module
    monkeypatch.setattr(libcst, "parse_module", lambda *a, **kw: calls.append(1) or real(*a, **kw))
    src = "from torch.cuda.amp import autocast\n\nwith autocast():\n    x.to('cuda')\n"
    fs = [
        finding(src, "autocast()", "torch.autocast('neuron')", code="NM301", add=("import torch",),
                remove=("torch.cuda.amp.autocast",)),
        finding(src, "'cuda'", "'neuron'"),
    ]
    result = apply_fixes_to_source(src, fs, Target.NEURON, unsafe=False)
    assert result.new_source == "import torch\n\nwith torch.autocast('neuron'):\n    x.to('neuron')\n"
    assert len(calls) == 1


@settings(max_examples=150, deadline=None, derandomize=True)
@given(st.lists(st.lists(st.tuples(st.integers(0, 40), st.integers(0, 4), st.sampled_from(["", "n", "neuron"])),
                         min_size=1, max_size=3), min_size=1, max_size=25))
def test_overlap_detection_by_neighbours_matches_comparing_every_pair(fixes: list[list[tuple[int, int, str]]]) -> None:
    """The sorted-span check (linear-ish, issue 13) keeps exactly the fixes the pairwise one kept:
    in position order, a fix whose edits touch no accepted fix's edits."""
    from neuron_migrate.findings import Finding, Fix, Severity, Span
    from neuron_migrate.rewrite.apply import _overlaps

    src = "x" * 50 + "\n"
    found = []
    for n, edits in enumerate(fixes):
        spans = sorted({(start, min(start + length, 50), text) for start, length, text in edits})
        fix = Fix(Target.NEURON, FixClass.SAFE, "t", tuple(Edit(Span(1, s, 1, e), r) for s, e, r in spans))
        found.append(Finding(code=f"NM{100 + n}", severity=Severity.WARNING, fix_class=FixClass.SAFE,
                             category="device", path="m.py", span=Span(1, spans[0][0], 1, spans[0][1]),
                             message="m", fixes=(fix,)))
    result = apply_fixes_to_source(src, found, Target.NEURON, unsafe=False)
    own = {f.code: sorted((e.span.col, e.span.end_col, e.replacement) for e in f.fixes[0].edits) for f in found}
    candidates = [f for f in found if not any(_overlaps(a, b) for a, b in zip(own[f.code], own[f.code][1:]))]
    candidates.sort(key=lambda f: (own[f.code][0][0], f.code))
    accepted: list[Finding] = []
    for f in candidates:
        if not any(_overlaps(x, y) for a in accepted for x in own[f.code] for y in own[a.code]):
            accepted.append(f)
    if result.error:  # the spliced text did not parse: nothing applied
        return
    assert sorted(f.code for f in result.applied) == sorted(f.code for f in accepted)
