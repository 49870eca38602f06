"""An accelerate trainer shaped like diffusers' train_unconditional example, on a machine where
`Accelerator()` picks the CPU (`python accelerate_cpu.py auto`: let it choose; default: cpu=True,
as a CPU-only CI config forces it)."""
import sys

import torch
from accelerate import Accelerator


def main():
    accelerator = Accelerator(cpu=sys.argv[1:] != ["auto"])
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.SiLU(), torch.nn.Linear(16, 8))
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    data = torch.utils.data.TensorDataset(torch.randn(32, 8))
    loader = torch.utils.data.DataLoader(data, batch_size=8, shuffle=True)
    model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
    for epoch in range(2):
        for (clean,) in loader:
            noise = torch.randn_like(clean)
            with accelerator.accumulate(model):
                loss = torch.nn.functional.mse_loss(model(clean + noise), noise)
                accelerator.backward(loss)
                optimizer.step()
                optimizer.zero_grad()
        accelerator.print(f"epoch {epoch}: loss {loss.item():.4f}")


if __name__ == "__main__":
    main()
