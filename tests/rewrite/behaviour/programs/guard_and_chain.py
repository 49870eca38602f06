"""An and-chain: the later operand is guarded by the first."""
import torch

fast = torch.cuda.is_available() and torch.cuda.get_device_capability()[0] >= 8
print("fast", fast)
