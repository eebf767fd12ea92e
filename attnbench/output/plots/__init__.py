"""Plots as PNG files (matplotlib, the optional `plot` extra): throughput, the ladder, ceilings, the roofline and
the precision ladder."""
