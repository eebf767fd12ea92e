"""Bench: the sampler (warm-up, L2 flush and clock around each pass), the runner, the compare matrix,
verify, and the square lab's rules."""
