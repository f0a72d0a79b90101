"""create_pretraining_data's output directory, replaced as a whole: everything is written into a
temporary sibling directory, which replaces --output_dir only when the run has succeeded (an
existing non-empty directory needs --overwrite). A failed or killed run leaves --output_dir as it
was; the next run removes the leftovers."""

from __future__ import annotations

import ctypes
import errno
import logging
import os
import shutil
import socket

from albert.errors import FlagError, OutputError

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
            raise FlagError(f"--output_dir {out} holds the input {path}, which replacing the "
                            "directory would delete; choose another --output_dir")
    if os.path.lexists(out) and not os.path.isdir(out):
        raise FlagError(f"--output_dir {out} exists and is not a directory")
    if os.path.isdir(out):
        if os.path.ismount(out):
            raise FlagError(f"--output_dir {out} is a mount point, which cannot be replaced "
                            "atomically; write into a directory below it")
        entries = sorted(os.listdir(out))
        if entries and not overwrite:
            shown = ", ".join(entries[:4]) + (", ..." if len(entries) > 4 else "")
            raise FlagError(f"--output_dir {out} is not empty ({shown}); pass --overwrite to "
                            "replace it once the new data is complete, or choose another "
                            "directory")


def remove_stale_temporaries(out: str) -> None:
    """Remove what killed runs on this host left beside --output_dir (their pid is gone)."""
    parent, base = os.path.split(out)
    if not os.path.isdir(parent):
        return
    host = socket.gethostname()
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


def _exchange(a: str, b: str) -> bool:
    """Atomically swap two directories (Linux renameat2 RENAME_EXCHANGE); False if unsupported."""
    try:
        renameat2 = ctypes.CDLL(None, use_errno=True).renameat2
    except (OSError, AttributeError):
        return False
    at_fdcwd, rename_exchange = -100, 2
    if renameat2(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), rename_exchange) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.EINVAL, errno.ENOSYS, errno.ENOTSUP, errno.EPERM):
        return False
    raise OSError(err, os.strerror(err), b)


def commit(work: str, out: str) -> None:
    """Put the finished work directory at `out`, replacing what was there."""
    if not os.path.isdir(out):
        os.rename(work, out)
        return
    if _exchange(work, out):
        shutil.rmtree(work)
        return
    # No atomic exchange on this file system: two renames. A crash between them leaves the new
    # data complete in the .partial directory and the old in the .old one.
    old = temporary_name(out, "old")
    os.rename(out, old)
    os.rename(work, out)
    shutil.rmtree(old)
