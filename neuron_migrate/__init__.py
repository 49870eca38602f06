"""neuron-migrate: scan, rewrite and check PyTorch CUDA code for AWS Trainium (TorchNeuron).

Importing this package is cheap: it never imports torch or libcst.
"""

__version__ = "0.1.0"

__all__ = ["__version__"]
