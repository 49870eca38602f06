"""torch.compile(backend="neuron") with a graph break and batch sizes past the recompile limit
(tests/check/test_check_compile.py)."""
import torch
from torch import nn

torch._dynamo.config.recompile_limit = 2  # hit quickly: 2 compiles per code object, then eager


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(4, 8)
        self.fc2 = nn.Linear(8, 2)

    def forward(self, x):
        h = torch.relu(self.fc1(x))
        torch._dynamo.graph_break()
        return self.fc2(h)


model = torch.compile(Net().to("neuron"), backend="neuron")
with torch.no_grad():
    for batch in (2, 2, 3, 4, 5, 2, 3):
        model(torch.ones(batch, 4, device="neuron"))
