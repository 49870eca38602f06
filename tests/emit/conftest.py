"""ONE report that every emitter renders to `golden/report.<ext>`; it holds every finding kind.

The rule pack (`mini_pack`, tests/conftest.py) is built by hand so that the goldens change only
when an emitter does, not when the shipped rule texts are edited.
"""

from __future__ import annotations

import pytest

from neuron_migrate.findings import Edit, Finding, Fix, FixClass, Report, Severity, Span, Target
from neuron_migrate.ruleset.model import RulePack


@pytest.fixture(scope="session")
def pack(mini_pack: RulePack) -> RulePack:
    return mini_pack


def _finding(code: str, severity: Severity, fix_class: FixClass, category: str, path: str,
             span: Span, message: str, source_line: str, symbol: str, **kw: object) -> Finding:
    return Finding(code=code, severity=severity, fix_class=fix_class, category=category, path=path,
                   span=span, message=message, source_line=source_line, symbol=symbol, **kw)  # type: ignore[arg-type]


def _fixes(span: Span, neuron: str, accelerator: str, applicability: FixClass, title: str,
           add_imports: tuple[str, ...] = ()) -> tuple[Fix, ...]:
    return (
        Fix(Target.NEURON, applicability, title, (Edit(span, neuron),), add_imports),
        Fix(Target.ACCELERATOR, applicability, title, (Edit(span, accelerator),), add_imports),
    )


@pytest.fixture(scope="session")
def report() -> Report:
    device = Span(3, 18, 3, 24)
    sync = Span(7, 4, 7, 26)
    amp = Span(9, 9, 9, 32)
    findings = [
        # safe fix, error
        _finding("NM101", Severity.ERROR, FixClass.SAFE, "device", "train.py", device,
                 "`'cuda'` selects a CUDA device", "model = Net().to('cuda')", "cuda",
                 fixes=_fixes(device, "'neuron'", "torch.accelerator.current_accelerator()",
                              FixClass.SAFE, "Use the neuron device")),
        # safe fix, warning; message with characters every format must escape
        _finding("NM201", Severity.WARNING, FixClass.SAFE, "cuda-api", "train.py", sync,
                 "`torch.cuda.synchronize` is CUDA-specific: use 100% <neuron>, not | cuda",
                 "    torch.cuda.synchronize()", "torch.cuda.synchronize",
                 fixes=_fixes(sync, "torch.neuron.synchronize", "torch.accelerator.synchronize",
                              FixClass.SAFE, "Rename to the Neuron API")),
        # unsafe fix that needs an import
        _finding("NM301", Severity.WARNING, FixClass.UNSAFE, "amp", "train.py", amp,
                 "`torch.cuda.amp.autocast` is CUDA-specific", "    with torch.cuda.amp.autocast():",
                 "torch.cuda.amp.autocast", statement_line=9,
                 fixes=_fixes(amp, "torch.autocast('neuron')", "torch.autocast('neuron')",
                              FixClass.UNSAFE, "Use torch.autocast", ("import torch",))),
        # manual, no fix
        _finding("NM701", Severity.ERROR, FixClass.MANUAL, "kernels-libraries", "models/attention.py",
                 Span(1, 0, 1, 30), "`flash_attn` is CUDA-only", "from flash_attn import flash_attn_func",
                 "flash_attn"),
        # none: no Neuron equivalent, a file-level finding
        _finding("NM702", Severity.INFO, FixClass.NONE, "kernels-libraries", "csrc/kernel.cu",
                 Span(1, 0, 1, 0), "`csrc/kernel.cu` is a CUDA source file", "", "csrc/kernel.cu"),
        # tool diagnostic
        _finding("NM001", Severity.ERROR, FixClass.NONE, "tool", "legacy/old.py", Span(2, 10, 2, 11),
                 "syntax error: Missing parentheses in call to 'print'", "print 'hello, world'", ""),
        # notebook cell, path with a space
        _finding("NM101", Severity.ERROR, FixClass.SAFE, "device", "notebooks/explore data.ipynb",
                 Span(2, 10, 2, 16), "`'cuda'` selects a CUDA device", "x = x.to('cuda')", "cuda", cell=3,
                 fixes=_fixes(Span(2, 10, 2, 16), "'neuron'", "torch.accelerator.current_accelerator()",
                              FixClass.SAFE, "Use the neuron device")),
        # runtime finding of `check` with details
        _finding("NM901", Severity.ERROR, FixClass.MANUAL, "runtime", "train.py", Span(12, 8, 12, 30),
                 "`aten::_fft_r2c` ran on the CPU 40 times\n(falls back on Neuron)",
                 "        spec = torch.fft.rfft(x)", "aten::_fft_r2c",
                 details={"op": "aten::_fft_r2c", "calls": 40, "time_ms": 12.5}),
    ]
    return Report(
        command="scan", root="/home/dev/project", findings=tuple(findings), files_scanned=12,
        duration_s=0.25, tool_version="0.1.0", pack_version="9.9.9",
        extras={
            "suppressed": 2,
            "baseline": {
                "path": ".neuron-migrate-baseline.json", "matched": 3,
                "fixed": [{"fingerprint": "0123456789abcdef0123", "code": "NM201", "path": "eval.py",
                           "symbol": "torch.cuda.synchronize", "count": 2}],
            },
        },
    ).sorted()
