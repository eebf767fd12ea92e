"""Analysis: pure functions over results. Verdicts from noise, speedups and geometric means,
regressions against a saved run, and the ladder view."""
