"""Renderers: TableModels drawn on the terminal (rich) and as Markdown, a compare's or sweep's terminal page, and
the `attnbench report` document."""
