"""The CLI's edge: notes on stderr, atomic report files, and errors turned into exit code 2."""

from __future__ import annotations

import os
import re
import sys
import tempfile
import traceback
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path


def note(message: str) -> None:
    print(message, file=sys.stderr)


def _mode_for(path: Path) -> int:
    try:
        return path.stat().st_mode & 0o777
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


_SURROGATE = re.compile("[\ud800-\udfff]")


def _encodable(text: str) -> str:
    """`text` as valid Unicode: a path that is not UTF-8 (a project directory's name) carries lone
    surrogates, which no UTF-8 stream accepts. They become U+FFFD, which is valid inside JSON,
    XML and Markdown alike (the text is already rendered: an escape could break its syntax)."""
    return _SURROGATE.sub("\ufffd", text)


def _directory_of(path: Path) -> Path:
    """The directory `path` will be written in; NeuronMigrateError if there is none."""
    from neuron_migrate.errors import NeuronMigrateError

    directory = path.parent if str(path.parent) else Path(".")
    if not directory.is_dir():
        raise NeuronMigrateError(f"{path}: cannot write: directory {directory} does not exist")
    return directory


def write_atomic(path: Path, text: str) -> None:
    """Write via a temporary file in the same directory and rename: never a half-written report."""
    from neuron_migrate.errors import NeuronMigrateError

    directory = _directory_of(path)
    try:
        fd, tmp = tempfile.mkstemp(dir=directory, prefix=f".{path.name}.", suffix=".tmp")
    except OSError as e:
        raise NeuronMigrateError(f"{path}: cannot write: {e.strerror or e}") from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as fh:
            fh.write(_encodable(text))
        os.chmod(tmp, _mode_for(path))  # mkstemp makes 0600 files; a report is an ordinary file
        os.replace(tmp, path)
    except OSError as e:
        Path(tmp).unlink(missing_ok=True)
        raise NeuronMigrateError(f"{path}: cannot write: {e.strerror or e}") from None
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def check_destinations(paths: Iterable[Path | None]) -> None:
    """Fail (NeuronMigrateError) on an output path whose directory does not exist, before the
    work that produces the output is done and before any other output is written."""
    from neuron_migrate.errors import NeuronMigrateError

    for path in paths:
        if path is not None:
            directory = _directory_of(path)
            if path.is_dir():
                raise NeuronMigrateError(f"{path}: cannot write: it is a directory")
            if not os.access(directory, os.W_OK | os.X_OK):
                raise NeuronMigrateError(f"{path}: cannot write: directory {directory} is not writable")


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
    from neuron_migrate.errors import NeuronMigrateError
    from neuron_migrate.pipeline.gate import EXIT_ERROR  # here, not at import: `--help` needs no config module

    try:
        return run()
    except NeuronMigrateError as e:
        note(f"neuron-migrate: error: {e}")
    except OSError as e:
        where = f"{e.filename}: " if e.filename else ""
        note(f"neuron-migrate: error: {where}{e.strerror or e}")
    except Exception:  # noqa: BLE001 - an internal error must not look like findings (1) or success
        note("neuron-migrate: internal error (please report it):\n" + traceback.format_exc())
    return EXIT_ERROR
