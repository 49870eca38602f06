"""The model panel's shared snippet: train a model on `neuron` and on the CPU from one seed and compare.

Prepended to each panel snippet (see test_emu_model_panel.py). ``compare`` builds the model twice
from the same seed; the `neuron` copy gets its AdamW optimizer *before* ``.to("neuron")`` (the common
training-script order, which only works when Parameter objects survive the move), then both run
``steps`` identical AdamW steps; it reports the largest gradient difference of the first step, the
largest parameter difference (leaving out parameters whose gradient is rounding noise, see below), the eval-mode output
difference, whether tied weights are still one Parameter, and (for generative models) the greedy
``generate()`` tokens on both devices.
"""

PANEL = '''
import copy
import torch

def _max_diff(a, b):
    return max((x.detach().cpu().float() - y.detach().float()).abs().max().item() for x, y in zip(a, b))

def _grad(p):
    return torch.zeros_like(p).cpu() if p.grad is None else p.grad.detach().cpu().clone()

def _to(batch, device):
    return {k: (v.to(device) if isinstance(v, torch.Tensor) else v) for k, v in batch.items()}

def compare(make, batch, loss_of, *, steps=3, lr=1e-3, tied=None, generate=None, eval_out=None):
    torch.manual_seed(0)
    cpu = make()
    torch.manual_seed(0)
    dev = make()
    opt_cpu = torch.optim.AdamW(cpu.parameters(), lr=lr)
    opt_dev = torch.optim.AdamW(dev.parameters(), lr=lr)   # built before the move
    dev.to("neuron")
    out = {"init_diff": _max_diff(dev.parameters(), cpu.parameters())}
    if tied is not None:
        out["tied"] = [tied(m) for m in (cpu, dev)]
    cpu.train(); dev.train()
    losses, grads = [], []
    largest = {}  # per model, each parameter's largest gradient element over all steps
    for _ in range(steps):
        for model, opt, device in ((cpu, opt_cpu, "cpu"), (dev, opt_dev, "neuron")):
            opt.zero_grad()
            loss = loss_of(model, _to(batch, device))
            loss.backward()
            now = [_grad(p).abs() for p in model.parameters()]
            largest[device] = [torch.maximum(a, b) for a, b in zip(largest.get(device, now), now)]
            if not grads:
                grads.append([_grad(p) for p in model.parameters()])
            elif len(grads) == 1:
                grads.append([_grad(p) for p in model.parameters()])
                out["grad_diff"] = _max_diff(grads[1], grads[0])
            opt.step()
            losses.append(loss.item())
    out["loss_diff"] = max(abs(a - b) for a, b in zip(losses[::2], losses[1::2]))
    # A parameter whose gradient is mathematically zero (a conv bias before BatchNorm, an attention
    # key bias under softmax) gets a gradient of pure float32 rounding noise on both devices, and
    # AdamW scales each element's step by its own gradient, so noise of either sign steps by ~lr.
    # param_diff_all compares every element; param_diff leaves out such elements (|gradient| < 1e-6
    # at every step, and not zero throughout on both devices: rounding noise next to real gradients
    # of ~1e-4..1e-1, also where the first step's is exactly zero and a later one's is noise, as on
    # an AMD EPYC CPU; an unused embedding row, zero throughout, stays in), whose first gradients
    # are still compared (grad_diff).
    out["param_diff_all"] = _max_diff(dev.parameters(), cpu.parameters())
    masks = [((c == 0) & (d == 0)) | (c >= 1e-6) for c, d in zip(largest["cpu"], largest["neuron"])]
    out["noise_fraction"] = 1 - sum(int(m.sum()) for m in masks) / sum(m.numel() for m in masks)
    out["param_diff"] = max(
        ((d.detach().cpu() - c.detach())[m].abs().max().item() if bool(m.any()) else 0.0)
        for d, c, m in zip(dev.parameters(), cpu.parameters(), masks)
    )
    out["moved"] = sorted({str(p.device) for p in dev.parameters()})
    out["changed"] = _max_diff(cpu.parameters(), [p.detach().clone() for p in make_ref(make)]) > 0
    cpu.eval(); dev.eval()
    with torch.no_grad():
        ref = (eval_out or (lambda m, b: loss_of(m, b)))(cpu, _to(batch, "cpu"))
        got = (eval_out or (lambda m, b: loss_of(m, b)))(dev, _to(batch, "neuron"))
        out["eval_diff"] = (got.detach().cpu().float() - ref.float()).abs().max().item()
        if generate is not None:
            out["generate"] = [generate(cpu, "cpu").tolist(), generate(dev, "neuron").cpu().tolist()]
    return out

def make_ref(make):
    torch.manual_seed(0)
    return list(make().parameters())
'''
