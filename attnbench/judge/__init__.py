"""Judging whole programs as the course does."""
