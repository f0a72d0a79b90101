"""create_pretraining_data's output directory, replaced as a whole: everything is written into a
temporary sibling directory, which replaces --output_dir only when the run has succeeded (an
existing non-empty directory needs --overwrite). A failed or killed run leaves --output_dir as it
was; the next run removes the leftovers."""

from __future__ import annotations

import logging
import os
import shutil
import socket

from albert.errors import OutputError, SettingError
from albert.fs import replace_directory

# The tool these lines are of (they are logged as its own).
logger = logging.getLogger("albert.create_pretraining_data")


def no_space_message(e: OSError) -> str:
    where = f" writing {e.filename}" if e.filename else ""
    return (f"no space left on device{where}: free some space or choose another --output_dir "
            "(the output needs about twice its final size while it is being shuffled)")


def temporary_name(out: str, kind: str) -> str:
    """A hidden sibling of --output_dir, named after this host and process."""
    parent, base = os.path.split(out)
    return os.path.join(parent, f".{base}.{kind}-{socket.gethostname()}-{os.getpid()}")


def check_output_dir(out: str, overwrite: bool, inputs: list[str]) -> None:
    for path in inputs:
        if os.path.commonpath([out, os.path.abspath(path)]) == out:
            raise SettingError(f"{{output_dir}} {out} holds the input {path}, which replacing "
                               "the directory would delete; choose another {output_dir}",
                               "output_dir")
    if os.path.lexists(out) and not os.path.isdir(out):
        raise SettingError(f"{{output_dir}} {out} exists and is not a directory", "output_dir")
    if os.path.isdir(out):
        if os.path.ismount(out):
            raise SettingError(f"{{output_dir}} {out} is a mount point, which cannot be "
                               "replaced atomically; write into a directory below it",
                               "output_dir")
        entries = sorted(os.listdir(out))
        if entries and not overwrite:
            shown = ", ".join(entries[:4]) + (", ..." if len(entries) > 4 else "")
            raise SettingError(f"{{output_dir}} {out} is not empty ({shown}); pass {{overwrite}} "
                               "to replace it once the new data is complete, or choose another "
                               "directory", "output_dir", "overwrite")


def remove_stale_temporaries(out: str) -> None:
    """Remove what killed runs on this host left beside --output_dir (their pid is gone). A run
    killed between the two renames of its commit (where the file system has no atomic exchange)
    left --output_dir missing and the previous output moved aside: that is put back first."""
    parent, base = os.path.split(out)
    if not os.path.isdir(parent):
        return
    host = socket.gethostname()
    if not os.path.lexists(out):
        prefix = f".{base}.old-{host}-"
        for name in sorted(os.listdir(parent)):
            if (name.startswith(prefix) and name[len(prefix):].isdigit()
                    and not _alive(int(name[len(prefix):]))):
                os.rename(os.path.join(parent, name), out)
                logger.warning("put back %s as %s: a run was killed while replacing it",
                               os.path.join(parent, name), out)
                break
    for name in os.listdir(parent):
        for kind in ("partial", "old"):
            prefix = f".{base}.{kind}-{host}-"
            if name.startswith(prefix) and name[len(prefix):].isdigit():
                pid = int(name[len(prefix):])
                if pid != os.getpid() and not _alive(pid):
                    shutil.rmtree(os.path.join(parent, name), ignore_errors=True)
                    logger.info("removed %s, left by an interrupted run",
                                os.path.join(parent, name))


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def make_work_dir(out: str) -> str:
    work = temporary_name(out, "partial")
    try:
        os.makedirs(os.path.dirname(out), exist_ok=True)
        os.mkdir(work)
    except OSError as e:
        raise OutputError(f"cannot create --output_dir {out}: {e.strerror}") from None
    return work


def commit(work: str, out: str) -> None:
    """Put the finished work directory at `out`, replacing what was there (albert.fs: one
    exchange, or two renames that put the old directory back if the second fails). The old one
    goes aside under this run's .old name, which the next run removes if a crash leaves it."""
    replace_directory(work, out, aside=temporary_name(out, "old"))
