"""Tables: the plain TableModel and every table built once from results, runs, listings, a class's scoreboard and
the explaining commands; the renderers in `attnbench.output.render` draw them."""
