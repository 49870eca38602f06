"""torch-scatter 2.1.2 (pinned in benchmarks/corpus): its test helpers (torch_scatter/testing.py),
loaded by path (the package itself needs its compiled extension). Tests run on the last device
the helpers list."""
import importlib.util

import torch

spec = importlib.util.spec_from_file_location("scatter_testing", "torch_scatter/testing.py")
testing = importlib.util.module_from_spec(spec)
spec.loader.exec_module(testing)
device = testing.devices[-1]
print("picked", device)
for dtype in testing.grad_dtypes:
    t = testing.tensor([[1, 2], [3, 4]], dtype, device)
    print(dtype, t.device.type == device.type, t.sum().item())
print("none", testing.tensor(None, torch.float, device))
