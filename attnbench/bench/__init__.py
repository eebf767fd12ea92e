"""Benchmark machinery: running variants and programs, timing them and checking what they produce."""
