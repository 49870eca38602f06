"""The emulated device's "driver": host storage relabelled as `neuron`, generators, patches. No ops."""
