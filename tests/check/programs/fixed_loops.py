"""Loops over tensors of fixed, different shapes inside one call, as trainers write them."""
import torch
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(8, 16)
        self.b = nn.Linear(16, 4)

    def forward(self, x):
        return self.b(torch.relu(self.a(x)))


class SGDMomentum:
    """A hand-written optimizer: state made on the first step, per-group norms."""

    def __init__(self, groups, lr=0.1):
        self.groups, self.lr, self.state = groups, lr, {}

    def step(self):
        norms = []
        for group in self.groups:
            grads = [p.grad for p in group]
            norms.append(torch.stack([g.norm() for g in grads]).sum())       # stack per group
            for p in group:
                if p not in self.state:
                    self.state[p] = torch.zeros_like(p)                       # one-time state init
                buf = self.state[p]
                buf.mul_(0.9).add_(p.grad)
                p.data.add_(buf, alpha=-self.lr)
        return torch.stack(norms)


def average(bufs, world_size):
    for b in bufs:
        b /= world_size                                                       # 3 buffer sizes


def train_epoch(model, opt, batches):
    for n in batches:
        x = torch.ones(n, 8, device="neuron")
        out = model(x)                                                        # batch sizes vary
        out.sum().backward()
        average([p.grad for p in model.parameters()][:3], 2)
        opt.step()
        for p in model.parameters():
            p.grad = None


model = Net().to("neuron")
params = list(model.parameters())
opt = SGDMomentum([params[:2], params[2:]])
for epoch in range(2):
    train_epoch(model, opt, [16, 16, 16, 12])                                # a smaller last batch
