"""The one atomic directory replace, and the one atomic write of files into a directory.

The directory replace: a directory is written whole under a temporary sibling name, then takes
the place of its target, so that a reader (a model server watching a base path, transformers
loading a checkpoint, a trainer reading shards) sees the old directory or the new one, never a
half-written one. An error leaves the old one where it was; only a crash between the two renames
(where the file system has no atomic exchange) leaves both beside the target. Its users: the
directories the toolkit owns, io.pretrained.replace_pretrained (the trainer's final/ and best/),
io.savedmodel.export_saved_model (SavedModels) and data.output_dir (the pretraining-data
generator's output).

The files write (staged_files): a directory somebody else may own (io.pretrained.save_pretrained,
transformers' way: a project folder, the folder a model was loaded from) gets its new files each
in one rename, every other file left alone; an error before the renames leaves each file as it
was. It lives in the foundation layer beside `errors` because the data layer
sits below io and both need it. It imports nothing but the standard library and `errors`: the
data generator imports it and must not pay for TensorFlow. What a caller may replace (not
somebody's run, not a directory the command reads) is the caller's check, made before any work;
this module replaces whatever it is given.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import logging
import os
import shutil
import uuid

from albert.errors import OutputError

logger = logging.getLogger(__name__)


def new_directory(parent: str, prefix: str) -> str:
    """A new, uniquely named directory in `parent`, with the mode the umask gives.

    tempfile.mkdtemp would make it 0700, and the rename would carry that into final/ or a
    SavedModel that a model server or a teammate on shared storage then cannot read.
    """
    while True:
        path = os.path.join(parent, f"{prefix}{uuid.uuid4().hex[:12]}")
        try:
            os.mkdir(path)
            return path
        except FileExistsError:
            continue


def umask_mode(directory: str) -> int:
    """The permission bits a new file in `directory` gets (0o666 less the umask, as the
    directory's default ACL has it): read from a probe file, since os.umask can only be read by
    setting it, which would race with other threads creating files."""
    while True:
        probe = os.path.join(directory, f".mode-{uuid.uuid4().hex[:12]}")
        try:
            fd = os.open(probe, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o666)
            break
        except FileExistsError:
            continue
    try:
        return os.fstat(fd).st_mode & 0o777
    finally:
        os.close(fd)
        os.unlink(probe)


def take_umask_mode(path: str) -> None:
    """Give the file `path` the mode a new file beside it gets. Writers that go through a
    temporary file (tempfile.mkstemp, safetensors' save_file) leave it 0600 whatever the umask:
    renamed into an export, a model server or a teammate could not read it."""
    os.chmod(path, umask_mode(os.path.dirname(os.path.abspath(path))))


def exchange(a: str, b: str) -> bool:
    """Swap two paths in one step (Linux renameat2 RENAME_EXCHANGE); False where the platform or
    file system cannot, so the caller falls back to two renames."""
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


def _remove(path: str) -> None:
    # The new directory is in place by now: a leftover old copy costs space, not correctness,
    # so it is reported rather than turned into a failed save.
    try:
        shutil.rmtree(path)
    except FileNotFoundError:
        pass
    except OSError as e:
        logger.warning("could not remove the replaced directory %s: %s", path, e)


def replace_directory(new: str, target: str, aside: str | None = None) -> None:
    """Put the complete directory `new` (a sibling of `target`) at `target`, replacing and then
    removing what was there.

    One atomic exchange where the file system offers it. Elsewhere two renames: the old
    directory is moved to `aside` (default: `new` + ".old", a name of our own, where
    "<target>.old" may be somebody's directory), and moved back if the second rename fails, so
    an error never leaves `target` missing; only a crash between the two renames can, with both
    directories complete beside it.

    A symbolic link at `target` is refused (a rename would replace the link, leaving the old
    directory where it points): staged_directory writes beside the link's target instead. A
    `target` no rename can move (a mount point: EBUSY) is an OutputError naming it, with
    `new` and `target` as they were.
    """
    if os.path.islink(target):
        raise OutputError(f"{target} is a symbolic link (to {os.path.realpath(target)}): give "
                          "the directory it points to")
    try:
        if not os.path.isdir(target):
            os.rename(new, target)
            return
        if exchange(new, target):
            _remove(new)  # it now holds the old directory
            return
        aside = aside or new + ".old"
        os.rename(target, aside)
    except OSError as e:
        if e.errno != errno.EBUSY:
            raise
        raise OutputError(f"cannot replace {target}: it is in use or a mount point (EBUSY), "
                          "which a rename cannot move; give a directory inside it, e.g. "
                          f"{os.path.join(target, '1')}") from None
    try:
        os.rename(new, target)
    except BaseException:
        os.rename(aside, target)
        raise
    _remove(aside)


@contextlib.contextmanager
def staged_directory(target: str, prefix: str = ".tmp-"):
    """Yield a new sibling directory of `target` to write into; it replaces `target`
    (replace_directory) when the block ends without an error, and is removed in every case,
    so an interrupted write leaves `target` as it was and no temporary directory beside it.
    A `target` that is a symbolic link (serving/1 -> /elsewhere/1) is written where it points:
    the link stays, and what it points to is the new directory."""
    target = os.path.realpath(target)
    parent = os.path.dirname(target)
    os.makedirs(parent, exist_ok=True)
    staged = new_directory(parent, prefix)
    try:
        yield staged
        replace_directory(staged, target)
    finally:
        shutil.rmtree(staged, ignore_errors=True)


@contextlib.contextmanager
def staged_files(target: str, last: tuple[str, ...] = (), remove: tuple[str, ...] = (),
                 prefix: str = ".tmp-"):
    """Yield a new, empty directory to write files into; when the block ends without an error,
    each file written there replaces its namesake in `target` (created if missing) in one
    rename, those named in `last` after the others, then the files named in `remove` (what
    the new ones make stale) are deleted; every other file of `target` stays.

    Each file is flushed to disk before its rename and takes the mode a new file in `target`
    gets (take_umask_mode), so an interrupted write leaves each of `target`'s files whole (the
    old one or the new one) and no temporary behind. The staging directory is a hidden one
    inside `target`: on its file system, so the renames cannot cross devices. A `target` that
    is not a directory is an OutputError naming it.
    """
    if os.path.exists(target) and not os.path.isdir(target):
        raise OutputError(f"{target} is a file, not a directory: give a directory to save into")
    if os.path.islink(target) and not os.path.exists(target):
        raise OutputError(f"{target} is a link to {os.readlink(target)}, which does not exist: "
                          "give a directory to save into")
    created = not os.path.isdir(target)
    os.makedirs(target, exist_ok=True)
    staged = new_directory(target, prefix)
    done = False
    try:
        yield staged
        written = os.listdir(staged)
        names = sorted(n for n in written if n not in last) + [n for n in last if n in written]
        mode = umask_mode(target)
        for name in names:
            path = os.path.join(staged, name)
            if os.path.islink(path) or not os.path.isfile(path):
                raise OutputError(f"{path}: only files can be saved into {target}")
            os.chmod(path, mode)
            fd = os.open(path, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        # Checked before the first rename: a folder in a file's place would stop the save half
        # way, new weights beside the old config.
        for name in names:
            there = os.path.join(target, name)
            if os.path.isdir(there) and not os.path.islink(there):
                raise OutputError(f"{there} is a directory: the save would write a file of that "
                                  f"name; move it or save into another directory")
        for name in names:
            os.replace(os.path.join(staged, name), os.path.join(target, name))
        for name in remove:
            with contextlib.suppress(FileNotFoundError):
                os.remove(os.path.join(target, name))
        _fsync_directory(target)
        done = True
    finally:
        shutil.rmtree(staged, ignore_errors=True)
        if created and not done:
            with contextlib.suppress(OSError):
                os.rmdir(target)  # ours, and empty unless somebody wrote there meanwhile


def _fsync_directory(directory: str) -> None:
    # The renames are durable once the directory is; where a directory cannot be opened for
    # that (some platforms, some network file systems), they are as durable as the system makes
    # them.
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
