"""Output: every table built once (result_tables.py) and drawn by thin renderers (terminal, Markdown, CSV,
JSON), plots, reports, and saving result files."""
