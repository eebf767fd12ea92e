"""Output: every table built once (tables.py) and drawn by thin renderers (terminal, Markdown, CSV,
JSON), plots, reports, and saving result files."""
