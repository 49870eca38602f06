"""Calls that rely on a project function's CUDA default device (issue 12): an `autocast` wrapper
or a `to_device` helper defined with `device_type="cuda"` / `device="cuda"`, called without the
argument. The definitions' defaults are NM101 already; these tests are about the calls. The code
is written for these tests, shaped like training utilities."""

from __future__ import annotations

import textwrap

import pytest

from neuron_migrate.ruleset.load import load_pack
from neuron_migrate.scan import analyze, parse

PACK = load_pack()

UTILS = '''
import contextlib

import torch


def autocast(enabled: bool = True, device_type: str = "cuda", dtype=torch.float16):
    """An AMP context that defaults to CUDA, as many training repositories write it."""
    if not enabled:
        return contextlib.nullcontext()
    return torch.autocast(device_type=device_type, dtype=dtype)


def move(batch, device="cuda:0", *, non_blocking=True):
    return {k: v.to(device, non_blocking=non_blocking) for k, v in batch.items()}


def train_epoch(model, loader, optimizer, amp: bool):
    for batch in loader:
        batch = move(batch)  # <-
        with autocast(amp):  # <-
            loss = model(**batch).loss
        loss.backward()
        optimizer.step()


def evaluate(model, loader, device):
    with torch.no_grad(), autocast(True, device_type=device.type):
        return [model(**move(b, device)) for b in loader]


def evaluate_from_config(model, loader, cfg):
    with autocast(**cfg.amp_kwargs):
        return [model(**move(b, *cfg.move_args)) for b in loader]


def shadowed(autocast, batch):
    with autocast():
        return batch
'''


def nm108_lines(source: str) -> list[int]:
    return sorted(f.span.line for f in analyze.analyze_source(source, "utils.py", PACK) if f.code == "NM108")


def marked(source: str) -> list[int]:
    return [i for i, line in enumerate(source.split("\n"), 1) if line.rstrip().endswith("# <-")]


def test_calls_that_leave_the_cuda_default_out_are_flagged() -> None:
    assert nm108_lines(UTILS) == marked(UTILS)
    (finding,) = [f for f in analyze.analyze_source(UTILS, "utils.py", PACK)
                  if f.code == "NM108" and f.span.line == marked(UTILS)[1]]
    assert finding.symbol == 'autocast() (device_type="cuda" by default)'


def test_non_cuda_defaults_and_methods_are_not_call_sites() -> None:
    source = textwrap.dedent('''
        def place(x, device="cpu"):
            return x.to(device)

        class Runner:
            def run(self, x, device="cuda"):
                return x.to(device)

        def main(x):
            place(x)
            return Runner().run(x)
        ''')
    assert nm108_lines(source) == []


@pytest.mark.parametrize("partial", ["1", "0"])
def test_a_class_constructed_without_its_cuda_default_device(partial: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """coqui-tts' tortoise: `Wav2VecAlignment()` whose `__init__(self, device="cuda")`."""
    filler = "\n\n".join(f"def helper_{i}(x):\n    return x * {i}\n" for i in range(6))
    source = textwrap.dedent('''
        class Aligner:
            def __init__(self, model_name, device="cuda"):
                self.device = device

        class Plain:
            def __init__(self, device="cpu"):
                self.device = device
        ''') + "\n" + filler + textwrap.dedent('''

        def build(name, device):
            a = Aligner(name)  # <-
            b = Aligner(name, device)
            c = Aligner(name, device=device)
            return a, b, c, Plain()
        ''')
    monkeypatch.setenv(parse.ENV, partial)
    assert nm108_lines(source) == marked(source)


@pytest.mark.parametrize("partial", ["1", "0"])
def test_a_call_in_a_function_the_partial_parse_would_skip_is_found(partial: str,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    # A large file: the calling functions have no CUDA word of their own.
    filler = "\n\n".join(f"def helper_{i}(x):\n    return x * {i}\n" for i in range(12))
    source = UTILS + "\n\n" + filler + "\n\ndef late(model, batch):\n    return model(**move(batch))  # <-\n"
    monkeypatch.setenv(parse.ENV, partial)
    assert nm108_lines(source) == marked(source)
