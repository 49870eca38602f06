"""diffusers 0.31.0 (pinned in benchmarks/corpus): training_utils.py (seeding, EMA, free_memory)
and utils/torch_utils.py (randn_tensor) on the device a training script picks. (Not FreeU's
`fourier_filter`: its complex `.real` has no Neuron kernel, a device limit `check` reports, not
something a rewrite can keep.)"""
import torch
from diffusers.training_utils import EMAModel, cast_training_params, free_memory, set_seed
from diffusers.utils.torch_utils import is_compiled_module, randn_tensor

set_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
print("picked", device)
generator = torch.Generator("cpu").manual_seed(1)
latents = randn_tensor((1, 4, 8, 8), generator=generator, device=device)
print("latents", latents.device.type == device.type, round(latents.sum().item(), 4))
print("scaled", round((latents * 0.5).abs().sum().item(), 3))
model = torch.nn.Linear(4, 4).to(device)
cast_training_params(model, dtype=torch.float32)
ema = EMAModel(model.parameters(), decay=0.9)
with torch.no_grad():
    for p in model.parameters():
        p.add_(1.0)
ema.step(model.parameters())
ema.to(device)
print("ema", round(sum(p.sum().item() for p in ema.shadow_params), 4))
free_memory()
print("compiled", is_compiled_module(model))
