"""A module other modules import a condition from (see guard_other_module.py)."""
import torch

HAS_GPU = torch.cuda.is_available()
