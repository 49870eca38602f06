"""Op registration for the emulated device: the table (registry), explicit kernels, one fallback."""
