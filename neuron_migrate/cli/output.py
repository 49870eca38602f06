"""The CLI's edge: notes on stderr, atomic report files, and errors turned into exit code 2."""

from __future__ import annotations

import os
import sys
import tempfile
import traceback
from collections.abc import Callable
from pathlib import Path

from neuron_migrate.gate import EXIT_ERROR


def note(message: str) -> None:
    print(message, file=sys.stderr)


def _mode_for(path: Path) -> int:
    try:
        return path.stat().st_mode & 0o777
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


def write_atomic(path: Path, text: str) -> None:
    """Write via a temporary file in the same directory and rename: never a half-written report."""
    from neuron_migrate.errors import NeuronMigrateError

    directory = path.parent if str(path.parent) else Path(".")
    if not directory.is_dir():
        raise NeuronMigrateError(f"{path}: cannot write: directory {directory} does not exist")
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as fh:
            fh.write(text)
        os.chmod(tmp, _mode_for(path))  # mkstemp makes 0600 files; a report is an ordinary file
        os.replace(tmp, path)
    except OSError as e:
        Path(tmp).unlink(missing_ok=True)
        raise NeuronMigrateError(f"{path}: cannot write: {e.strerror or e}") from None
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def fail_on_errors(run: Callable[[], int]) -> int:
    """Run a command body; a domain error, an OS error or a crash is a message and exit code 2."""
    from neuron_migrate.errors import NeuronMigrateError

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
