"""pytest plugin: run tests on the emulated `neuron` device, report and gate per test.

    pytest --neuron-emulate                          activate the device before collection
           --neuron-fail-on fallback,recompile       fail a test with such findings
           --neuron-max-recompiles N                 recompiles a test may cause (default 0)
           --neuron-allow-ops aten::foo,aten::bar    known fallbacks, allowed everywhere
    @pytest.mark.neuron_allow_ops("aten::foo", ...)  known fallbacks, allowed in one test

Each test (setup, call and teardown) is recorded in its own `neuron_emu.recording()` scope, with
its own `check.passes.PassTracker` (so its recompiles are counted by passes, as `check` does); its
fallbacks and recompiles go into the test report as a "neuron" section and into the terminal
summary. On Python 3.12+ the tracker uses `sys.monitoring`, beside any other tool; on 3.11, when
another `sys.settrace` tracer is active (coverage, a debugger), the test is not traced, to leave it
working, and its recompiles are guessed from the shapes alone (`details.method` is "shapes").
Loaded in every pytest run through the `pytest11` entry point, so this module imports nothing
heavy: torch and the emulator load only with --neuron-emulate.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Generator
from typing import Any

import pytest

MARKER = "neuron_allow_ops"
_STATE = pytest.StashKey[dict[str, Any]]()
_RECORDER = pytest.StashKey[Any]()
_FINDINGS = pytest.StashKey[list[Any]]()
_TRACKER = pytest.StashKey[Any]()
# Under `check --pytest` (which sets a list here), every traced test's pass stamps in run order:
# they go into its record (`compile_passes`) so the whole run's recompiles are counted by passes.
COMPLETED_PASSES: list[list[dict[str, Any]]] | None = None
# Under `check --pytest` too: the fallback calls each op made in tests whose marker allowed it, and
# the tests that failed (the child record's `pytest` key).
CHECK_RUN: dict[str, Any] | None = None
# check --pytest's checkpoint of its records (check.probe.child), called with a test's tracker from
# its line events, so a test that crashes the process still leaves what ran
ON_TICK: Callable[[Any], None] | None = None
CHECKPOINT_S = 1.0


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("neuron", "emulated neuron device (neuron-migrate)")
    group.addoption("--neuron-emulate", action="store_true", default=False,
                    help="Run tests on the emulated neuron device and record fallbacks and recompiles.")
    group.addoption("--neuron-fail-on", default="", metavar="KINDS",
                    help="Fail tests with findings of these kinds: fallback, recompile, host-sync, "
                         "placement, dtype (comma-separated).")
    group.addoption("--neuron-max-recompiles", type=int, default=0, metavar="N",
                    help="Recompiles a test may cause before --neuron-fail-on recompile fails it.")
    group.addoption("--neuron-allow-ops", default="", metavar="OPS",
                    help="Fallback ops allowed in every test (comma-separated aten names).")


def _split(text: str) -> list[str]:
    return [t.strip() for t in text.split(",") if t.strip()]


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", f"{MARKER}(*ops): CPU-fallback ops this test may use on neuron.")
    if not config.getoption("--neuron-emulate"):
        return
    from neuron_migrate.check.torch_requirement import INSTALL, torch_problem
    from neuron_migrate.ruleset.load import load_pack

    problem = torch_problem()
    if problem is not None:
        raise pytest.UsageError(f"--neuron-emulate: {problem}. Install it with: {INSTALL}")

    kinds = set(_split(config.getoption("--neuron-fail-on")))
    known = load_pack().kinds
    unknown = kinds - set(known)
    if unknown:
        raise pytest.UsageError(f"--neuron-fail-on: unknown kinds {sorted(unknown)} (known: {', '.join(known)})")
    import neuron_emu

    try:
        neuron_emu.activate()  # idempotent: fine when the entry point already activated it
    except neuron_emu.EmulatorUnavailable as exc:
        raise pytest.UsageError(f"--neuron-emulate: {exc}") from None
    from neuron_migrate.check.probe import observe
    from neuron_migrate.ruleset.load import load_pack

    observed = observe.Observations()
    observe.install(observed)
    config.stash[_STATE] = {
        "observed": observed,
        "kinds": frozenset(kinds), "allow": _split(config.getoption("--neuron-allow-ops")),
        "max_recompiles": config.getoption("--neuron-max-recompiles"), "pack": load_pack(),
        "tests": [],  # (nodeid, findings) for the terminal summary
    }


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Generator[None, None, None]:
    if _STATE not in item.config.stash:
        yield
        return
    import neuron_emu
    from neuron_migrate.check.probe.passes import PassTracker

    item.config.stash[_STATE]["observed"].clear()
    with neuron_emu.recording() as rec:
        item.stash[_RECORDER] = rec
        tracker = item.stash[_TRACKER] = PassTracker(rec) if PassTracker.available() else None
        if tracker is not None:
            if ON_TICK is not None:
                tick = ON_TICK
                tracker.on_tick = lambda: tick(tracker)
                tracker.tick_at = time.monotonic() + CHECKPOINT_S
            tracker.start()
        try:
            yield
        finally:
            if tracker is not None:
                tracker.stop()
                if COMPLETED_PASSES is not None:
                    COMPLETED_PASSES.append(tracker.to_dict())


def _analyze(item: pytest.Item, state: dict[str, Any]) -> list[Any]:
    from neuron_migrate.check.analyze import analyze
    from neuron_migrate.check.records import Records
    from neuron_migrate.check.run_record import EmuRecord

    allow = list(state["allow"])
    marked = [str(a) for mark in item.iter_markers(MARKER) for a in mark.args]
    allow += marked
    record = {"schema_version": 1, **item.stash[_RECORDER].to_dict()}
    if CHECK_RUN is not None:
        allowed = CHECK_RUN.setdefault("allowed", {})
        for op in record.get("ops", ()):
            if op["name"] in marked:
                allowed[op["name"]] = allowed.get(op["name"], 0) + int(op["count"])
    observed = state["observed"].to_dict()
    tracker = item.stash.get(_TRACKER, None)
    if tracker is not None:
        tracker.stamp()
        observed["compile_passes"] = tracker.to_dict()
    findings, _ = analyze(Records((EmuRecord.from_dict(record),), (observed,)), state["pack"], item.config.rootpath,
                          allow_ops=allow)
    return findings


def _section(findings: list[Any]) -> str:
    return "\n".join(f"{f.location()}: {f.code} {f.message}" for f in findings)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any, None]:
    outcome = yield
    if CHECK_RUN is not None and outcome.get_result().failed:
        failed = CHECK_RUN.setdefault("failed", [])
        if item.nodeid not in failed:
            failed.append(item.nodeid)
    state = item.config.stash.get(_STATE, None)
    if state is None or call.when != "call" or _RECORDER not in item.stash:
        return
    report = outcome.get_result()
    tracer = sys.gettrace()
    sys.settrace(None)  # the analysis is not the test's: no need to trace it
    try:
        findings = _analyze(item, state)
    finally:
        sys.settrace(tracer)
    item.stash[_FINDINGS] = findings
    if not findings:
        return
    report.sections.append(("neuron", _section(findings)))
    state["tests"].append((item.nodeid, findings))
    if not state["kinds"] or not report.passed:
        return
    from neuron_migrate.config import Settings
    from neuron_migrate.findings import Report
    from neuron_migrate.pipeline.gate import kind_failures
    from neuron_migrate.ruleset.load import load_pack

    kinds = state["kinds"]
    settings = Settings(max_recompiles=state["max_recompiles"] if "recompile" in kinds else None)
    reasons = kind_failures(Report("check", str(item.config.rootpath), tuple(findings)), settings, kinds,
                            load_pack())
    if reasons:
        report.outcome = "failed"
        report.longrepr = "neuron: " + "; ".join(reasons) + "\n" + _section(findings)


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    state = config.stash.get(_STATE, None)
    if state is None:
        return
    tr = terminalreporter
    tr.section("neuron (emulated device)")
    if not state["tests"]:
        tr.write_line("no CPU fallbacks, host syncs or recompiles recorded")
        return
    for nodeid, findings in state["tests"]:
        tr.write_line(nodeid)
        for f in findings:
            tr.write_line(f"  {f.code} {f.symbol}: {f.message}")
