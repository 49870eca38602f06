"""`device == "cuda"` and `"cuda" in device` guards."""
import torch


def setup(device: str) -> str:
    if device == "cuda":
        props = torch.cuda.get_device_properties(0)
        return f"gpu {props.name}"
    return "plain"


def tune(device: str) -> str:
    if "cuda" in device:
        torch.backends.cuda.matmul.allow_tf32 = True
        return "tf32 " + torch.cuda.get_device_name()
    return "default"


device = "cuda" if torch.cuda.is_available() else "cpu"
print("picked", device)
print(setup(device))
print(tune(device))
