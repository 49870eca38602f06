import sys

import torch

x = torch.ones(4, 4, device="neuron")
print((x @ x).sum().item())
sys.exit(int(sys.argv[1]) if len(sys.argv) > 1 else 0)
