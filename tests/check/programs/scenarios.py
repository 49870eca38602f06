import torch
from torch import nn


class Scaled(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(16, 4)

    def forward(self, x):
        return self.lin(x) * self.scale.to(x.device)


model = Scaled().to("neuron")
model.scale = nn.Parameter(torch.full((4,), 2.0))  # added after .to(): stays on the CPU
for batch in (3, 5, 8):
    x = torch.ones(batch, 16).to("neuron")
    y = model(x)
q, r = torch.linalg.qr(torch.ones(4, 4, device="neuron"))
d = torch.ones(3, dtype=torch.float64, device="neuron")
e = d * 2
idx = torch.nonzero(y > 0)
mask = torch.ones(8, 4)
z = y + mask
