"""A compiled nn.Sequential (its forward is torch's: Dynamo compiles its own wrapper in
torch/_dynamo/external_utils.py), trained, then evaluated under no_grad: one recompile."""
import torch
from torch import nn

model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2)).to("neuron")
compiled = torch.compile(model, backend="neuron")
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(3):
    loss = compiled(torch.ones(2, 4, device="neuron")).sum()
    loss.backward()
    opt.step()
    opt.zero_grad()
model.eval()
with torch.no_grad():
    out = compiled(torch.ones(2, 4, device="neuron"))
