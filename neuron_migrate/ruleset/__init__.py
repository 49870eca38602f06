"""Code that reads the rule pack in `rules/` (the data lives apart, in the top-level `rules/`)."""
