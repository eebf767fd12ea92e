"""Output, by job: `tables/` builds every table once as a TableModel, `render/` draws them (terminal, Markdown),
`export/` saves a result in each format (JSON, CSV, Markdown), `plots/` draws PNG plots."""
