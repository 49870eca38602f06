"""Fix computation: the edits each finding carries, per rewrite target (generic kinds of the rule
schema plus named fixers). Pure functions of the parsed file; rewrite only applies them."""
