"""A compiled nn.Sequential (Dynamo compiles torch's wrapper) past a recompile limit of 1."""
import torch
from torch import nn

torch._dynamo.config.recompile_limit = 1
model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2)).to("neuron")
compiled = torch.compile(model, backend="neuron", dynamic=False)
with torch.no_grad():
    for batch in (2, 3, 4):
        compiled(torch.ones(batch, 4, device="neuron"))
