"""Two ranks (torchrun), each: the model moved once, a new batch per step (input feeding), the
train and eval loaders' own normalisation constants copied once each, and one constant uploaded
again every step (the only NM908), as the distributed trainers that check miscounted do."""
import os

import torch
from torch import nn

rank = int(os.environ["RANK"])
model = nn.Linear(4, 4)
model.to("neuron")  # one move per rank: not "moved 2 times"


class Loader:
    def __init__(self, mean: float) -> None:
        self.mean = torch.full((4,), mean).to("neuron")  # once per instance: train and eval


train, evaluate = Loader(0.5), Loader(0.25)
scale = torch.full((4,), 2.0)
for step in range(4):
    batch = torch.full((2, 4), float(step + rank)).to("neuron")  # a new batch each step
    out = model(batch - train.mean) * scale.to("neuron")  # the same constant again every step
    out.sum().backward()
with torch.no_grad():
    model(torch.ones(2, 4).to("neuron") - evaluate.mean)
