"""Kernel models: launch geometry, occupancy, and the profiler metric table."""
