"""Explaining the numbers: Nsight Compute profiles, launch geometry and occupancy, the counter table."""
