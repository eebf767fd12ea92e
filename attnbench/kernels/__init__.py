"""Kernels: the variant model, the built-in catalogue, user variants and the launch-fact expressions."""
