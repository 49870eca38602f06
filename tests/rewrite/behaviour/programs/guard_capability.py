"""An if-guard around a CUDA-only query (no Neuron equivalent): the guard must stay."""
import torch

use_flash = False
if torch.cuda.is_available():
    major, _ = torch.cuda.get_device_capability()
    use_flash = major >= 8
print("flash", use_flash)
x = torch.arange(6.0).reshape(2, 3)
print((x @ x.T).tolist())
