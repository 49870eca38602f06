"""Emulator overhead: emulated `neuron` time divided by plain CPU eager time, side by side.

    python benchmarks/bench_emulator.py [--rounds 9] [--skip-import]

Both variants run in this process, one intra-op thread, in interleaved rounds; the ratio is the
median over rounds (recording is always on in the emulator). Targets from issue 5:
GPT block fwd+bwd <= 1.3x, small MLP fwd+bwd+Adam <= 2.5x, activation adds <= 0.2 s to import torch.
Not a test: timings are noisy on shared machines; nothing here asserts.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

BACKEND = Path(__file__).resolve().parents[1] / "backend"


def _import_time(emulate: bool) -> float:
    # Bytecode caching on, as in a normal install (this sandbox sets PYTHONDONTWRITEBYTECODE).
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("NEURON_MIGRATE_") and k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(BACKEND), env.get("PYTHONPATH")]))
    if emulate:
        env["NEURON_MIGRATE_EMULATE"] = "1"
    code = ("import time; t = time.perf_counter(); import torch; d = time.perf_counter() - t\n"
            "import neuron_emu\n"
            f"if {emulate} and not neuron_emu.is_active(): neuron_emu.activate(); d = time.perf_counter() - t\n"
            "print(d)")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    return float(out.stdout.strip().splitlines()[-1])


def _activation_time() -> float:
    """activate() alone, after import torch: the part of the difference the emulator owns."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("NEURON_MIGRATE_") and k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(BACKEND), env.get("PYTHONPATH")]))
    code = ("import torch, time; t = time.perf_counter(); import neuron_emu; neuron_emu.activate(); "
            "print(time.perf_counter() - t)")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    return float(out.stdout.strip().splitlines()[-1])


def bench_import(rounds: int) -> tuple[float, float, float]:
    plain, emu, act = [], [], []
    _import_time(False), _import_time(True)  # warm the page cache and the bytecode caches
    for _ in range(rounds):
        plain.append(_import_time(False))
        emu.append(_import_time(True))
        act.append(_activation_time())
    return statistics.median(plain), statistics.median(emu), statistics.median(act)


def _time(fn: Callable[[], None], iters: int) -> float:
    t = time.perf_counter()
    for _ in range(iters):
        fn()
    return (time.perf_counter() - t) / iters


def side_by_side(make_step: Callable[[str], Callable[[], None]], rounds: int, iters: int) -> tuple[float, float, float]:
    cpu, dev = make_step("cpu"), make_step("neuron")
    cpu(), dev(), cpu(), dev()  # warm up (and let the emulator see every signature once)
    ratios, t_cpu, t_dev = [], [], []
    for _ in range(rounds):
        a = _time(cpu, iters)
        b = _time(dev, iters)
        t_cpu.append(a)
        t_dev.append(b)
        ratios.append(b / a)
    return statistics.median(t_cpu), statistics.median(t_dev), statistics.median(ratios)


def gpt_block_step(torch, device: str) -> Callable[[], None]:
    nn = torch.nn
    d_model, heads, seq, batch = 256, 4, 128, 8

    class Block(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.ln1, self.ln2 = nn.LayerNorm(d_model), nn.LayerNorm(d_model)
            self.qkv, self.proj = nn.Linear(d_model, 3 * d_model), nn.Linear(d_model, d_model)
            self.mlp = nn.Sequential(nn.Linear(d_model, 4 * d_model), nn.GELU(), nn.Linear(4 * d_model, d_model))

        def forward(self, x):  # type: ignore[no-untyped-def]
            b, t, c = x.shape
            q, k, v = self.qkv(self.ln1(x)).split(c, dim=2)
            q, k, v = (z.view(b, t, heads, c // heads).transpose(1, 2) for z in (q, k, v))
            y = nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.proj(y.transpose(1, 2).reshape(b, t, c))
            return x + self.mlp(self.ln2(x))

    torch.manual_seed(0)
    model = Block().to(device)
    x = torch.randn(batch, seq, d_model, device=device)

    def step() -> None:
        model.zero_grad(set_to_none=True)
        model(x).square().mean().backward()

    return step


def mlp_adam_step(torch, device: str) -> Callable[[], None]:
    nn = torch.nn
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 10)).to(device)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    x = torch.randn(32, 784, device=device)
    y = torch.randint(0, 10, (32,), device=device)

    def step() -> None:
        opt.zero_grad(set_to_none=True)
        nn.functional.cross_entropy(model(x), y).backward()
        opt.step()

    return step


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--skip-import", action="store_true")
    ns = ap.parse_args(argv)

    if not ns.skip_import:
        plain, emu, act = bench_import(max(3, ns.rounds // 2))
        print(f"import torch: plain {plain:.2f} s, with emulator {emu:.2f} s, difference {emu - plain:+.2f} s; "
              f"activate() itself {act:.3f} s (target <= +0.20 s)")

    sys.path.insert(0, str(BACKEND))
    import torch

    import neuron_emu

    neuron_emu.activate()
    torch.set_num_threads(1)
    import warnings

    warnings.simplefilter("ignore")
    for name, factory, iters, target in (
        ("GPT block d256/h4/T128/B8 fwd+bwd", gpt_block_step, 3, 1.3),
        ("MLP 784-256-256-10 bs32 fwd+bwd+Adam", mlp_adam_step, 30, 2.5),
    ):
        t_cpu, t_dev, ratio = side_by_side(lambda dev, f=factory: f(torch, dev), ns.rounds, iters)
        print(f"{name}: cpu {t_cpu * 1e3:.2f} ms, emulated {t_dev * 1e3:.2f} ms, "
              f"ratio {ratio:.2f}x (target <= {target}x)")
    snap = neuron_emu.snapshot()
    print(f"recorded: {sum(o['count'] for o in snap['ops'])} ops, {snap['compiles']['count']} simulated compiles")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
