"""Storages move with `.cuda()` too (a tensor's `untyped_storage()`, torch.load's map_location
callback), but their `.to` takes the device by keyword only: `storage.to("neuron")` raises TypeError."""
import io

import torch


def moved():
    storage = torch.arange(4.0).untyped_storage()
    if torch.cuda.is_available():
        storage = torch.arange(4.0).untyped_storage().cuda()
    print("picked", storage.device.type, storage.nbytes())


def loaded():
    buffer = io.BytesIO()
    torch.save({"w": torch.arange(4.0)}, buffer)
    buffer.seek(0)
    use_gpu = torch.cuda.is_available()
    state = torch.load(buffer, map_location=lambda storage, loc: storage.cuda() if use_gpu else storage)
    print("loaded", state["w"].device.type, state["w"].sum().item())


if __name__ == "__main__":
    moved()
    loaded()
