"""A small training loop that logs its loss, for `check --parity`:
`python parity.py float64`: a float64 accumulation whose precision the device's 32 bits lose;
`python parity.py autocast`: a bfloat16 autocast region around the loss;
`python parity.py clean`: float32 work only, identical on both runs."""
import sys

import torch

torch.manual_seed(0)
mode = sys.argv[1]
w = torch.randn(8, 8, device="neuron", requires_grad=True)
x = torch.randn(16, 8, device="neuron")
opt = torch.optim.SGD([w], lr=0.01)
for step in range(3):
    with torch.autocast("neuron", dtype=torch.bfloat16, enabled=mode == "autocast"):
        y = x @ w
    loss = y.float().pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    print(f"step {step} loss {loss.item():.6f}")
if mode == "float64":
    total = torch.tensor([1e8], dtype=torch.float64, device="neuron") + 1.0  # float32 result: 1e8
    print("balance", (total - 1e8).item())                     # 1.0 in float64, 0.0 narrowed
print("final", w.detach().abs().sum().cpu())
