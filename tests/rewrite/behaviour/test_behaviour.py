"""The behaviour harness on the guard-idiom programs (programs/) and the sample projects; see
behaviour_harness for what "still runs the same" means."""

from __future__ import annotations

from pathlib import Path

import pytest
from behaviour_harness import (
    RUN_AFTER_NEURON_REWRITE,
    SAMPLE_RUNS,
    _rewrite,
    _run_all,
    _same,
    _working_copy,
)

from neuron_migrate.findings import Target


@pytest.mark.slow
@pytest.mark.parametrize("target", list(Target), ids=lambda t: t.value)
def test_programs_that_ran_still_run_the_same(tmp_path: Path, target: Target) -> None:
    programs = _working_copy(tmp_path)
    before = _run_all(programs, target)
    _rewrite(tmp_path / "work", target)
    after = _run_all(programs, target)
    failures: list[str] = []
    ran_before = 0
    for program, old, new in zip(programs, before, after):
        if old["rc"] != 0:
            if target is Target.NEURON and program.name in RUN_AFTER_NEURON_REWRITE and new["rc"] != 0:
                failures.append(f"{program.name}: the rewrite should make it run; exit {new['rc']}\n{new['stderr'][-2000:]}")
            continue
        ran_before += 1
        if new["rc"] != 0:
            failures.append(f"{program.name}: exit {new['rc']} after the rewrite (0 before)\n{new['stderr'][-2000:]}")
            continue
        why = _same(str(old["stdout"]), str(new["stdout"]), target)
        if why:
            failures.append(f"{program.name}: {why}")
    idioms = sum(1 for p in programs if p.name not in SAMPLE_RUNS)
    # Every guard-idiom program runs before on both targets; if one stopped, the harness proves nothing.
    assert ran_before >= idioms, [(p.name, r["stderr"][-500:]) for p, r in zip(programs, before) if r["rc"] != 0]
    assert not failures, "\n\n".join(failures)


def test_the_comparison_allows_only_the_picked_device_to_change() -> None:
    assert _same("picked cpu\n3.0\n", "picked neuron\n3.0\n", Target.NEURON) == ""
    assert _same("picked cpu\n3.0\n", "picked neuron:0\n3.0\n", Target.NEURON) == ""
    assert _same("picked cpu\n", "picked neuron\n", Target.ACCELERATOR) != ""
    assert _same("picked cpu\n", "picked cuda\n", Target.NEURON) != ""
    assert _same("flash False\n", "flash True\n", Target.NEURON) != ""
    assert _same("device=cpu amp=False\n", "device=neuron amp=False\n", Target.NEURON) == ""
    assert _same("device=cpu amp=False\n", "device=neuron amp=True\n", Target.NEURON) != ""
    assert _same("step 1 | 12.5 ms/step\n", "step 1 | 80.1 ms/step\n", Target.NEURON) == ""
    assert _same("a\n", "a\nb\n", Target.NEURON) != ""
