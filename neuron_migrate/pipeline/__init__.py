"""Raw findings -> the Report: suppressions, selection, severities, baseline, diff filter, and
the exit-code gate."""
