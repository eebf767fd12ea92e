"""Backends: what runs a pass. pycuda (device, compile, launch), the torch peer, and the cpu variant;
each offers upload, one pass, download, free, an L2 flush and a clock."""
