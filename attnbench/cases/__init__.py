"""Cases: the course's binary format, the seeded built-in suite, the one rule that resolves a CASE
argument, sweep inputs, and the exact float64 reference."""
