"""Recompile scenarios; `python recompiles.py SCENARIO...` (tests/check/test_check_recompiles.py)."""
import sys

import torch
import torch.nn.functional as F
from torch import nn


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(8, 16)
        self.fc2 = nn.Linear(16, 4)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


def train(batches):
    model = MLP().to("neuron")
    opt = torch.optim.Adam(model.parameters())
    for batch in batches:
        x = torch.ones(batch, 8, device="neuron")
        loss = F.mse_loss(model(x), torch.zeros(batch, 4, device="neuron"))
        opt.zero_grad()
        loss.backward()
        opt.step()


def same_line():
    for _ in range(3):
        torch.ones(3, 5, device="neuron").sum(); torch.ones(7, 2, device="neuron").sum()


def generate():
    tokens = torch.zeros(1, 4, device="neuron")
    for _ in range(6):
        tokens = torch.cat([tokens, torch.ones(1, 1, device="neuron")], dim=1)


def half(x):
    return x * 0.5                                # one line, called from two places (rotate_half(q), rotate_half(k))


def two_callers():
    for _ in range(3):
        half(torch.ones(2, 3, device="neuron"))
        half(torch.ones(5, 1, device="neuron"))


class Head(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.fc = nn.Linear(width, width)

    def forward(self, x):
        return self.fc(x).tanh()                  # Head.forward


@torch.no_grad()
def evaluate(model, batch, width):
    return model(torch.ones(batch, width, device="neuron"))


def train_then_evaluate(width, eval_batch, amp):
    model = Head(width).to("neuron")
    for _ in range(3):
        with torch.autocast("neuron", dtype=torch.bfloat16, enabled=amp):
            out = model(torch.ones(4, width, device="neuron"))
        out.float().sum().backward()
    evaluate(model, eval_batch, width)            # another caller of the same module


SCENARIOS = {"fixed": lambda: train([32] * 5), "batches": lambda: train([16, 16, 24, 32, 24, 16]),
             "same_line": same_line, "generate": generate, "two_callers": two_callers,
             "eval_batch": lambda: train_then_evaluate(6, 12, amp=False),
             "eval_dtype": lambda: train_then_evaluate(7, 4, amp=True)}
for name in sys.argv[1:]:
    SCENARIOS[name]()
