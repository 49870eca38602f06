"""Seeding under a guard."""
import torch

torch.manual_seed(0)
if torch.cuda.is_available():
    torch.cuda.manual_seed_all(0)
print(torch.rand(3).tolist())
