"""Code that runs inside the checked program's own process (the child, the pytest plugin's recording):
it imports nothing heavy at module level and never the parent-side modules of `check`."""
