"""`neuron-migrate rules` (the rule table) and `neuron-migrate explain CODE` (one rule in full).

Both read the shipped pack plus a team's own rule files (`--extra-rules`, the config's
`extra-rules`, or NEURON_MIGRATE_EXTRA_RULES). A malformed rule file is exit 2.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from neuron_migrate.cli.output import fail_on_errors

if TYPE_CHECKING:
    from neuron_migrate.ruleset.model import Rule, RulePack

_COLUMNS = ("Code", "Name", "Severity", "Fix", "Title")


def _pack(extra_rules: list[Path] | None, config_file: Path | None) -> RulePack:
    from neuron_migrate.config import load_settings
    from neuron_migrate.ruleset.load import load_pack

    overrides = {"extra-rules": [str(p) for p in extra_rules] if extra_rules else None}
    settings = load_settings(Path("."), overrides, config_file=config_file)
    return load_pack(settings.extra_rules)


def _rows(rules: list[Rule]) -> list[tuple[str, ...]]:
    return [(r.code, r.name, r.severity.value, r.fix.fix_class.value, r.title) for r in rules]


def _plain_table(rows: list[tuple[str, ...]]) -> str:
    """Aligned columns without box drawing or truncation: readable in a pipe, a file or grep."""
    widths = [max(len(row[i]) for row in [_COLUMNS, *rows]) for i in range(len(_COLUMNS) - 1)]
    lines = []
    for row in [_COLUMNS, *rows]:
        lines.append("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=False)) + "  " + row[-1])
    return "\n".join(lines) + "\n"


def _print_table(rows: list[tuple[str, ...]]) -> None:
    if not sys.stdout.isatty():
        sys.stdout.write(_plain_table(rows))
        return
    from rich.console import Console
    from rich.table import Table

    colour = {"error": "red", "warning": "yellow", "info": "cyan"}
    table = Table(*_COLUMNS, box=None, header_style="bold")
    for code, name, severity, fix, title in rows:
        table.add_row(code, name, f"[{colour[severity]}]{severity}[/]", fix, title)
    Console().print(table)


def _list(prefixes: list[str] | None, fmt: str, extra_rules: list[Path] | None, config_file: Path | None) -> int:
    from neuron_migrate.ruleset.docs import rule_to_dict
    from neuron_migrate.ruleset.load import pack_summary
    from neuron_migrate.ruleset.select import select_codes

    pack = _pack(extra_rules, config_file)
    codes = select_codes(pack, prefixes or ["ALL"])  # the table lists rules outside the default selection too
    rules = [rule for code, rule in pack.rules.items() if code in codes]
    if fmt == "json":
        doc: dict[str, Any] = {"pack": dict(pack_summary(pack)), "rules": [rule_to_dict(r) for r in rules]}
        sys.stdout.write(json.dumps(doc, indent=2) + "\n")
    else:
        _print_table(_rows(rules))
    return 0


def _explain(code: str, fmt: str, extra_rules: list[Path] | None, config_file: Path | None) -> int:
    from neuron_migrate.errors import NeuronMigrateError
    from neuron_migrate.ruleset.docs import render_rule, rule_to_dict

    pack = _pack(extra_rules, config_file)
    wanted = code.strip().upper()
    rule = pack.get(wanted)
    if rule is None:
        if re.fullmatch(r"NM\d{0,2}", wanted) and any(c.startswith(wanted) for c in pack.rules):
            raise NeuronMigrateError(
                f"{code!r} is a prefix, not a rule code: `neuron-migrate rules {wanted}` lists its rules")
        raise NeuronMigrateError(f"unknown rule code {code!r} (see `neuron-migrate rules`)")
    if fmt == "json":
        sys.stdout.write(json.dumps(rule_to_dict(rule, full=True), indent=2) + "\n")
    elif fmt == "text" and sys.stdout.isatty():
        from rich.console import Console
        from rich.markdown import Markdown

        Console().print(Markdown(render_rule(rule)))
    else:
        sys.stdout.write(render_rule(rule))
    return 0


def _check_format(value: str, allowed: tuple[str, ...]) -> str:
    if value not in allowed:
        raise typer.BadParameter(f"{value!r} is not one of: {', '.join(allowed)}")
    return value


def register(app: typer.Typer) -> None:
    extra_help = "A rule YAML file of your own, loaded on top of the shipped pack (repeatable)."

    @app.command("rules")
    def rules_command(
        selectors: list[str] = typer.Argument(None, help="Codes or prefixes to list (NM1, NM20, NM201, ALL)."),
        fmt: str = typer.Option("text", "--format", help="text or json."),
        extra_rules: list[Path] = typer.Option(None, "--extra-rules", help=extra_help),
        config_file: Path = typer.Option(None, "--config", help="Use this configuration file."),
    ) -> None:
        """List the rules: code, name, severity, fix class and title."""
        _check_format(fmt, ("text", "json"))
        raise typer.Exit(fail_on_errors(lambda: _list(selectors, fmt, extra_rules, config_file)))

    @app.command("explain")
    def explain_command(
        code: str = typer.Argument(..., help="A rule code, e.g. NM101."),
        fmt: str = typer.Option("text", "--format", help="text, markdown or json."),
        extra_rules: list[Path] = typer.Option(None, "--extra-rules", help=extra_help),
        config_file: Path = typer.Option(None, "--config", help="Use this configuration file."),
    ) -> None:
        """Explain one rule: what it finds, why it matters on Trainium, how to fix it, examples."""
        _check_format(fmt, ("text", "markdown", "json"))
        raise typer.Exit(fail_on_errors(lambda: _explain(code, fmt, extra_rules, config_file)))
