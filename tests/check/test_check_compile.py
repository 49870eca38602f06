"""torch.compile(backend="neuron") end to end: a graph break (NM904), recompiles on new batch sizes
(NM905) and the recompile limit (NM906), with exact counts.

programs/compiled.py runs batches 2, 2, 3, 4, 5, 2, 3 with recompile_limit 2 and static shapes:
- b=2: `forward` compiles up to the graph break (graph 1), its resume function the rest (graph 2);
- b=2: both cached;
- b=3: both guards fail on the batch size: 2 recompiles (graphs 3 and 4);
- b=4: `forward` has 2 cache entries: limit hit, nothing compiled; it runs eagerly, so without
  the break no resume function runs. Dynamo logs "Recompiling function forward" for this call
  too, which is the limit hit, not a recompile;
- b=5: runs eagerly without another log; b=2, b=3: cached graphs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.check.conftest import PROGRAMS, CheckRun, check_program


def line_of(text: str) -> int:
    lines = (PROGRAMS / "compiled.py").read_text(encoding="utf-8").splitlines()
    (number,) = [i for i, line in enumerate(lines, 1) if text in line]
    return number


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> CheckRun:
    return check_program(tmp_path_factory.mktemp("compiled"), "compiled.py")


def lines(found: list[dict[str, Any]]) -> list[int]:
    return [f["span"]["line"] for f in found]


def test_the_graph_break_is_one_finding_at_its_line_with_dynamos_reason(run: CheckRun) -> None:
    (found,) = run.findings("NM904")
    assert found["path"] == "compiled.py"
    assert found["span"]["line"] == line_of("torch._dynamo.graph_break()")
    assert found["symbol"] == "Call to `torch._dynamo.graph_break()`"
    assert "User-inserted graph break" in found["details"]["reason"]
    # Dynamo logs a graph break once per site; the record's count is that log (see the report)
    assert found["details"]["count"] == 1
    assert found["message"] == "Graph break: Call to `torch._dynamo.graph_break()`: 1x"


def test_each_new_batch_size_recompiles_forward_and_its_resume_function_once(run: CheckRun) -> None:
    found = sorted(run.findings("NM905"), key=lambda f: f["span"]["line"])
    forward, resume = line_of("def forward"), line_of("torch._dynamo.graph_break()")
    assert lines(found) == [forward, resume]
    assert [f["symbol"] for f in found] == ["forward", f"torch_dynamo_resume_in_forward_at_{resume}"]
    assert [f["details"]["guard_failures"] for f in found] == [
        ["tensor 'x' size mismatch at index 0. expected 2, actual 3"],
        ["tensor 'h' size mismatch at index 0. expected 2, actual 3"],
    ]
    assert found[0]["message"] == "Recompiled: forward: tensor 'x' size mismatch at index 0. expected 2, actual 3"
    assert f"Recompiling function forward in {run.root}" in found[0]["details"]["reason"]
    assert f"compiled.py:{forward}" in found[0]["details"]["reason"]


def test_the_recompile_limit_is_hit_once_by_forward_not_counted_as_a_recompile(run: CheckRun) -> None:
    (found,) = run.findings("NM906")
    assert found["span"]["line"] == line_of("def forward")
    assert found["symbol"] == "forward"
    assert found["severity"] == "error"
    assert found["details"]["reason"] == (
        "torch._dynamo hit config.recompile_limit (2): 2/1: tensor 'x' size mismatch at index 0. expected 3, actual 4"
    )
    assert found["details"]["guard_failures"] == ["tensor 'x' size mismatch at index 0. expected 3, actual 4",
                                                  "tensor 'x' size mismatch at index 0. expected 2, actual 4"]
    assert found["message"].endswith("limit 2; last guard failure: tensor 'x' size mismatch at index 0. expected 3, actual 4")


def test_summary_counts_graphs_breaks_recompiles_and_limit_hits(run: CheckRun) -> None:
    compiles = run.report["extras"]["check"]["compiles"]
    assert {k: v for k, v in compiles.items() if k.startswith("dynamo_")} == {
        "dynamo_graphs": 4, "dynamo_graph_breaks": 1, "dynamo_recompiles": 2, "dynamo_recompile_limit": 1,
    }
    assert run.exit_code == 1  # NM906 is an error
    assert "torch.compile graph breaks" in run.stdout


def test_after_the_limit_forward_runs_eagerly_and_its_ops_recompile_per_new_size(run: CheckRun) -> None:
    eager = {f["span"]["line"]: f["details"] for f in run.findings("NM903")}
    for text in ("h = torch.relu(self.fc1(x))", "return self.fc2(h)"):
        d = eager[line_of(text)]
        assert [dim["values"] for dim in d["varied_dimensions"]] == [[4, 5]], text


def test_a_recompile_of_torchs_own_wrapper_is_at_the_users_line(tmp_path: Path) -> None:
    """Dynamo names torch/_dynamo/external_utils.py for a compiled module whose forward is torch's:
    the finding is at the user's call that recompiled it (the evaluation under no_grad)."""
    run = check_program(tmp_path, "compiled_sequential.py")
    (nm905,) = run.findings("NM905")
    assert (nm905["path"], nm905["span"]["line"]) == ("compiled_sequential.py", 16)
    assert "external_utils.py" in nm905["details"]["compiled_site"]["file"]
    assert "grad_mode" in nm905["message"]
    assert all("site-packages" not in f["path"] and not f["path"].startswith("/") for f in run.report["findings"])


def test_the_recompile_limit_of_torchs_own_wrapper_is_at_the_users_line(tmp_path: Path) -> None:
    run = check_program(tmp_path, "compiled_sequential_limit.py")
    (limit,) = run.findings("NM906")
    assert (limit["path"], limit["span"]["line"]) == ("compiled_sequential_limit.py", 10)
    assert limit["symbol"] == 'compiled(torch.ones(batch, 4, device="neuron"))'
    assert "external_utils.py" in limit["details"]["compiled_site"]["file"]
