"""A condition passed to a function decides the parameter's guard there; its default too."""
import torch


def setup(use_gpu, accelerated=torch.cuda.is_available()):
    if use_gpu:
        major, _ = torch.cuda.get_device_capability()
        print("capability", major)
    else:
        print("no capability check")
    device = "cpu"
    if accelerated:
        device = "cuda"
        torch.cuda.synchronize()
    print("picked", device)
    print(torch.arange(3.0, device=device).sum().item())


setup(torch.cuda.is_available())
setup(use_gpu=torch.cuda.is_available())
