"""Measuring: profiling under Nsight Compute and measuring the GPU's ceilings."""
