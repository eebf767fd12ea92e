"""Kernels: the Variant model, the built-in catalogue, and nvcc (options, sources, ptxas figures) in one place."""
