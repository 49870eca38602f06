"""The CLI's edge: notes on stderr, atomic report files, and errors turned into exit code 2."""

from __future__ import annotations

import errno
import os
import re
import stat
import sys
import tempfile
import traceback
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from neuron_migrate.config import Settings
    from neuron_migrate.emit import JUnitGrouping
    from neuron_migrate.findings import Report
    from neuron_migrate.ruleset.model import RulePack


def note(message: str) -> None:
    print(message, file=sys.stderr)


def _new_file_mode() -> int:
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


_SURROGATE = re.compile("[\ud800-\udfff]")


def _encodable(text: str) -> str:
    """`text` as valid Unicode: a path that is not UTF-8 (a project directory's name) carries lone
    surrogates, which no UTF-8 stream accepts. They become U+FFFD, which is valid inside JSON,
    XML and Markdown alike (the text is already rendered: an escape could break its syntax)."""
    return _SURROGATE.sub("\ufffd", text)


# Names of an already open descriptor (`--output /dev/stdout`, `>(cat)`): opened, never renamed over.
_DESCRIPTOR_PREFIXES = ("/dev/fd/", "/dev/stdout", "/dev/stderr", "/proc/")


def _destination(path: Path) -> tuple[str, os.stat_result | None]:
    """Where writing `path` lands: the file a symlink chain ends at (so the link stays a link), and
    that file's `stat` (None: it does not exist yet). NeuronMigrateError if it cannot be written."""
    from neuron_migrate.errors import NeuronMigrateError

    name = os.fspath(path)
    try:
        st = os.stat(name)
    except FileNotFoundError:
        st = None
    except OSError as e:  # a symlink loop, a file used as a directory
        raise NeuronMigrateError(f"{path}: cannot write: {e.strerror or e}") from None
    if st is not None and stat.S_ISDIR(st.st_mode):
        raise NeuronMigrateError(f"{path}: cannot write: is a directory")
    if st is not None and not (stat.S_ISREG(st.st_mode) or stat.S_ISCHR(st.st_mode) or stat.S_ISFIFO(st.st_mode)):
        kind = "a block device" if stat.S_ISBLK(st.st_mode) else "a socket" if stat.S_ISSOCK(st.st_mode) else "not a file"
        raise NeuronMigrateError(f"{path}: cannot write: {kind} (refusing to write a report into it)")
    real = os.path.realpath(name)
    if st is None:  # a new file, or a dangling symlink: create what the link names
        directory = os.path.dirname(real) or "."
        if not os.path.isdir(directory):
            raise NeuronMigrateError(f"{path}: cannot write: directory {directory} does not exist")
    return real, st


def _write_through(name: str, data: bytes, *, append: bool) -> None:
    """Write into an existing special file (device, FIFO) or an open descriptor's name, in place."""
    flags = os.O_WRONLY | os.O_NOCTTY | os.O_CLOEXEC | (os.O_APPEND if append else 0)
    fd = os.open(name, flags)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
    finally:
        os.close(fd)


def _replace(real: str, data: bytes, st: os.stat_result | None) -> None:
    """Replace the regular file `real` (or create it) via a temporary sibling and a rename: never a
    half-written report. An existing file keeps its permission bits (and, for root, its owner)."""
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(real) or ".", prefix=f".{os.path.basename(real)}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.chmod(tmp, stat.S_IMODE(st.st_mode) if st is not None else _new_file_mode())  # mkstemp: 0600
        if st is not None and os.geteuid() == 0 and (st.st_uid, st.st_gid) != (0, 0):
            os.chown(tmp, st.st_uid, st.st_gid)
        os.replace(tmp, real)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_atomic(path: Path, text: str) -> None:
    """Write a report to `path`. A regular file (or a new one) is replaced atomically through a
    temporary file; a symlink is followed (its target is written, the link stays); a character
    device or FIFO (`/dev/null`, `>(cat)`) is written in place, never replaced by a file; a
    directory, block device or socket is refused. Errors are NeuronMigrateError naming `path`."""
    from neuron_migrate.errors import NeuronMigrateError

    real, st = _destination(path)
    data = _encodable(text).encode("utf-8")
    descriptor = os.path.abspath(path).startswith(_DESCRIPTOR_PREFIXES) or real.startswith("/proc/")
    try:
        if st is not None and (descriptor or not stat.S_ISREG(st.st_mode)):
            _write_through(os.fspath(path), data, append=stat.S_ISREG(st.st_mode))
        else:
            if st is not None and not os.access(real, os.W_OK):
                raise PermissionError(errno.EACCES, os.strerror(errno.EACCES))
            _replace(real, data, st)
    except OSError as e:
        raise NeuronMigrateError(f"{path}: cannot write: {e.strerror or e}") from None


def check_destinations(paths: Iterable[Path | None]) -> None:
    """Fail (NeuronMigrateError) on an output path that cannot be written (no such directory, a
    directory, a block device), before the work that produces the output is done and before any
    other output is written."""
    for path in paths:
        if path is not None:
            _destination(path)


def write_outputs(outputs: Sequence[tuple[Path | None, str, str | None]]) -> None:
    """Write rendered reports, each `(destination, text, note)`: None goes to stdout, a path is
    written atomically and then `note` (if any) goes to stderr. Every destination's directory is
    checked first, so that a bad `--output-*` path fails the run before any file is written.
    Shared by `scan`, `report` and `diff` (and meant for `check`)."""
    check_destinations(dest for dest, _, _ in outputs)
    for dest, text, message in outputs:
        if dest is None:
            sys.stdout.write(_encodable(text))
            sys.stdout.flush()
        else:
            write_atomic(dest, text)
            if message:
                note(message)


def fail_on_errors(run: Callable[[], int]) -> int:
    """Run a command body; a domain error, an OS error or a crash is a message and exit code 2."""
    from neuron_migrate.errors import Interrupted, NeuronMigrateError
    from neuron_migrate.pipeline.gate import (
        EXIT_ERROR,  # here, not at import: `--help` needs no config module
    )

    try:
        return run()
    except Interrupted as e:
        note(f"neuron-migrate: {e}")
        return e.exit_code
    except NeuronMigrateError as e:
        note(f"neuron-migrate: error: {e}")
    except OSError as e:
        where = f"{e.filename}: " if e.filename else ""
        note(f"neuron-migrate: error: {where}{e.strerror or e}")
    except Exception:  # noqa: BLE001 - an internal error must not look like findings (1) or success
        note("neuron-migrate: internal error (please report it):\n" + traceback.format_exc())
    return EXIT_ERROR


def _project_urls() -> dict[str, str]:
    """`Project-URL` entries of the installed metadata by label (lower case), "home" for Home-page."""
    from importlib.metadata import PackageNotFoundError, metadata

    try:
        meta = metadata("neuron-migrate")
    except PackageNotFoundError:
        return {}
    urls = {"home": (meta.get_all("Home-page") or [""])[0]}
    for entry in meta.get_all("Project-URL") or ():
        label, _, url = entry.partition(",")
        if url.strip():
            urls.setdefault(label.strip().lower(), url.strip())
    return {k: v for k, v in urls.items() if v}


def information_uri() -> str:
    """The project's home page (SARIF `informationUri`): the first Project-URL, else Home-page."""
    urls = _project_urls()
    return next((v for k, v in urls.items() if k != "home"), urls.get("home", ""))


def rules_uri() -> str:
    """The rules page online (`Project-URL: Rules, ...`): SARIF points each rule at its section."""
    return _project_urls().get("rules", "")


def choose(option: str, value: str, allowed: Sequence[str]) -> str:
    """A command's `--format`-style choice, checked one way for every command."""
    from neuron_migrate.errors import ConfigError

    if value not in allowed:
        raise ConfigError(f"command line option {option}: expected one of {', '.join(allowed)}, got {value!r}")
    return value


def deliver(
    report: Report,
    settings: Settings,
    pack: RulePack | None,
    outputs: Sequence[tuple[str, Path | None]],
    *,
    quiet: bool,
    junit_group: JUnitGrouping | None = None,
    show_source: bool = False,
    statistics: bool = False,
) -> None:
    """A command's outputs: the baseline it was asked to write, every requested format rendered
    first (pure emitters), then written (files atomically, the rest to stdout)."""
    from neuron_migrate.cli.console import colour
    from neuron_migrate.emit import FORMATS, EmitOptions, JUnitGrouping

    for warning in report.warnings:
        note(f"warning: {warning}")
    if settings.write_baseline is not None:
        from neuron_migrate.pipeline import baseline

        write_atomic(settings.write_baseline, baseline.dumps(baseline.from_findings(report.findings),
                                                             report.tool_version))
        if not quiet:
            note(f"wrote baseline of {len(report.findings)} findings to {settings.write_baseline}")
    options = EmitOptions(pack=pack, target=settings.target, summary=not quiet,
                          junit_grouping=junit_group or JUnitGrouping.RULE, information_uri=information_uri(),
                          rules_uri=rules_uri(), show_source=show_source, statistics=statistics)
    if any(fmt == "sarif" for fmt, _ in outputs) and any(f.cell is not None for f in report.findings):
        from neuron_migrate.api import notebook_lines  # SARIF points into the .ipynb file

        options = replace(options, notebook_lines=notebook_lines(report))
    rendered = [
        (dest, FORMATS[fmt](report, replace(options, color=dest is None and colour(sys.stdout))),
         None if quiet else f"wrote {fmt} report to {dest}")
        for fmt, dest in outputs
    ]
    write_outputs(rendered)


def gate(report: Report, settings: Settings, pack: RulePack, *, quiet: bool) -> int:
    """The exit code of a command that produced `report` (neuron_migrate.pipeline.gate decides)."""
    from neuron_migrate.pipeline.gate import EXIT_FINDINGS, EXIT_OK, failures

    reasons = failures(report, settings, pack)
    if reasons and not quiet and report.command == "check":  # scan's failing findings are its output
        note("check failed: " + "; ".join(reasons))
    return EXIT_FINDINGS if reasons else EXIT_OK
