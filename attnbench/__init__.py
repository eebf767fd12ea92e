"""attnbench: run, verify, time and compare CUDA attention kernels on course-style testcases."""

__version__ = "0.1.0"
