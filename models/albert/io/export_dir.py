"""Where a SavedModel may go: the checks that keep an export from replacing what it must not
(a run, a checkpoint, the model being exported, a TF Serving base path), made before any work.

No TensorFlow: albert.export and a fine-tuner's --export_dir (cli.resolve) are checked at the
command's start; io.savedmodel writes the export.
"""

from __future__ import annotations

import os
import shlex

from albert.errors import SettingError

SAVED_MODEL_FILES = ("saved_model.pb", "saved_model.pbtxt")
# What marks a run or a checkpoint: our run record, tf.train's checkpoint index (and *.index
# files, its variables), Hugging Face weights.
RUN_MARKERS = ("run.json", "checkpoint", "model.safetensors", "pytorch_model.bin")


def _is_saved_model(directory: str) -> bool:
    return any(os.path.isfile(os.path.join(directory, n)) for n in SAVED_MODEL_FILES)


def _within(path: str, directory: str) -> bool:
    return path == directory or path.startswith(directory.rstrip(os.sep) + os.sep)


def _run_inside(directory: str) -> str | None:
    """The first file under `directory` that belongs to a run or a checkpoint (SavedModels are
    not looked into: their variables/ is a checkpoint of their own)."""
    for root, dirs, files in os.walk(directory):
        if root != directory and _is_saved_model(root):
            dirs[:] = []
            continue
        for name in files:
            if name in RUN_MARKERS or (name.endswith(".index") and not _is_saved_model(root)):
                return os.path.join(root, name)
    return None


def _hint(path: str) -> str:
    return shlex.quote(os.path.join(os.path.dirname(os.path.abspath(path)), "serving", "1"))


def check_output_dir(path: str | None, setting: str = "output_dir", *, overwrite: bool = False,
                     protect=(), overwrite_setting: str | None = "overwrite") -> str | None:
    """Refuse, before any work, a SavedModel destination whose replacement would destroy data.

    Exporting replaces the directory whole, so a path such as TF Serving's base path (instead
    of a version directory) or a checkpoint directory would lose everything in it. Allowed: a
    new or empty directory, or an existing SavedModel (a new version of it). A non-empty
    directory that holds no SavedModel needs `overwrite`; a directory that is, or lies above,
    one of `protect` (the checkpoint being exported, the run's own directories) or that holds
    a run or a checkpoint anywhere inside is always refused (SettingError naming `setting`, and
    `overwrite_setting` where that would do). Returns the absolute path (None for None).
    """
    named = (setting,) if overwrite_setting is None else (setting, overwrite_setting)
    flag = "{" + setting + "}"
    if not path:
        return None
    target = os.path.abspath(os.fspath(path))
    existing = target
    while not os.path.lexists(existing):
        existing = os.path.dirname(existing)
    if not os.path.isdir(existing):
        where = "is a file" if existing == target else f"lies under the file {existing}"
        raise SettingError(f"{flag} {path} {where}: give a directory for the SavedModel (e.g. "
                           "serving/1, a TF Serving version directory)", *named)
    real = os.path.realpath(target)
    if os.path.ismount(real):
        raise SettingError(f"{flag} {path} is a mount point, which an export cannot replace "
                           "(it writes a new directory and renames it into place): give a "
                           f"directory inside it, e.g. {shlex.quote(os.path.join(path, '1'))}",
                           *named)
    for other in protect:
        if other and _within(os.path.realpath(os.fspath(other)), real):
            raise SettingError(f"{flag} {path} would replace {other}, which this command "
                               f"reads or writes; give a directory of its own (e.g. "
                               f"{_hint(path)})", *named)
    if not os.path.isdir(target) or not os.listdir(target) or _is_saved_model(target):
        return target
    found = _run_inside(target)
    if found:
        raise SettingError(f"{flag} {path} holds a run or a checkpoint ({found}); exporting "
                           f"there would delete it: give a directory of its own (e.g. "
                           f"{_hint(path)})", *named)
    if overwrite:
        return target
    entries = sorted(os.listdir(target))
    versions = [e for e in entries if e.isdigit() and _is_saved_model(os.path.join(target, e))]
    shown = ", ".join(entries[:5]) + (", ..." if len(entries) > 5 else "")
    why = (f"it is a TF Serving base path (versions {', '.join(versions)}): give a version "
           f"directory such as {shlex.quote(os.path.join(path, str(max(map(int, versions)) + 1)))}"
           if versions else f"it holds {shown} and no SavedModel")
    way = (f", or pass {{{overwrite_setting}}} to replace it" if overwrite_setting
           else ", or empty it first")
    raise SettingError(f"{flag} {path} is not empty: {why}{way}", *named)


def check_export_dir(spec) -> None:
    """A fine-tuner's --export_dir (spec: a train.run_spec.RunSpec), checked before any
    training: check_output_dir, protecting every path the run reads or writes (the export comes
    at the end, when a refusal would waste the run and a replacement could take its checkpoints
    with it)."""
    out = spec.outputs
    files = spec.data.files()
    check_output_dir(out.export_dir, "export_dir", overwrite_setting=None,
                     protect=[out.checkpoint_dir, spec.model.checkpoint_path, out.output_dir,
                              out.log_dir, out.cache_dir, spec.vocabulary, *files])
