"""One family of domain errors; the CLI turns each into a message and exit code 2."""

from __future__ import annotations


class NeuronMigrateError(Exception):
    """A usage, configuration, rule-pack or internal error (exit 2)."""


class Interrupted(NeuronMigrateError):
    """check was stopped by a signal (a cancelled CI job, Ctrl-C); exit 128 + the signal."""

    def __init__(self, signum: int, message: str) -> None:
        super().__init__(message)
        self.exit_code = 128 + signum


class RulePackError(NeuronMigrateError):
    """A malformed rule file: names the file, the rule and the field."""

    def __init__(self, file: str, code: str | None, field: str | None, problem: str) -> None:
        self.file, self.code, self.field, self.problem = file, code, field, problem
        where = file + (f": rule {code}" if code else "") + (f": field '{field}'" if field else "")
        super().__init__(f"{where}: {problem}")


class ConfigError(NeuronMigrateError):
    """A bad configuration file or option: names the file and the key."""
