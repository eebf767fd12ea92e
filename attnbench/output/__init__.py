"""Printers and plots that turn measurements into tables, files and figures."""
