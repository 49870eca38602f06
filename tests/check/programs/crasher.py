"""Runs on the device for a while, then ends as argv[1] says: without a Python exception."""

import ctypes
import glob
import json
import os
import signal
import sys
import time

import torch

x = torch.ones(4, 4, device="neuron")
q, r = torch.linalg.qr(x)  # a CPU fallback: NM901 must survive the crash
for _ in range(40):
    y = (x @ x).sum()
    time.sleep(0.05)
how = sys.argv[1]
if how == "exit":
    os._exit(7)
elif how == "segv":
    ctypes.string_at(0)
elif how == "kill":
    os.kill(os.getpid(), signal.SIGKILL)
elif how == "fake":  # a clean-looking record, then an exit that skips the child's end
    for path in glob.glob(os.path.join(os.environ["NEURON_MIGRATE_RECORD_DIR"], "neuron-check-*.json")):
        with open(path) as f:
            record = json.load(f)
        record.update(partial=False, exit={"status": "ok", "code": 0}, seal="0" * 64)
        with open(path, "w") as f:
            json.dump(record, f)
    os._exit(0)
