"""Guards held in variables, as pytorch/examples' mnist had them: `use_cuda = ...; if use_cuda:`
over CUDA-only code, and `args.cuda = not args.no_cuda and torch.cuda.is_available()`."""
import argparse

import torch

parser = argparse.ArgumentParser()
parser.add_argument("--no-cuda", action="store_true", default=False)
parser.add_argument("--seed", type=int, default=1)
args = parser.parse_args()
args.cuda = not args.no_cuda and torch.cuda.is_available()

use_cuda = torch.cuda.is_available()
if use_cuda:
    major, _ = torch.cuda.get_device_capability()
    print("capability", major)

torch.manual_seed(args.seed)
if args.cuda:
    torch.cuda.manual_seed(args.seed)
device = torch.device("cuda" if args.cuda else "cpu")
kwargs = {"num_workers": 1, "pin_memory": True} if args.cuda else {}
print("picked", device, sorted(kwargs))
x = torch.arange(6.0, device=device).reshape(2, 3)
print("sum", (x * 2).sum().item())
