"""Starts a grandchild that would run for minutes, then exits (argv[1] "exit") or sleeps ("sleep")."""

import subprocess
import sys
import time

import torch

x = torch.ones(2, device="neuron")
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
print("GRANDCHILD", child.pid, file=sys.stderr, flush=True)
if sys.argv[1] == "sleep":
    time.sleep(600)
