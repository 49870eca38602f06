"""The migration record: build (scan, rewrite, check of one project), diff, and its views
and renderers."""
