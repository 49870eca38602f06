"""Once-per-process registration of the emulated `neuron` device (filled in below)."""
ACTIVE = False
def register() -> None:
    raise RuntimeError("not yet")
