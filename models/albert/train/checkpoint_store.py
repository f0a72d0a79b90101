"""The checkpoint store: a run's model and optimizer state saved every so often in its run
directory, and read back at a resume or to initialise another run.

Beside TensorFlow's `ckpt-N` files and `checkpoint` index, the store keeps `config.json`, the model
config (a restore under another config is refused). TensorFlow writes a checkpoint's files under
temporary names and updates the `checkpoint` index last, so a crash mid-save leaves the previous
checkpoint as the latest; an unreadable newest checkpoint is skipped for the one before it; a
missing or garbled index is rebuilt from the files. Each save also saves every rank's input
position (albert.train.input_positions) first, so a checkpoint on disk always has them beside it.
"""

from __future__ import annotations

import glob
import logging
import os
import re
import shutil
import time

import tensorflow as tf

from albert.errors import CheckpointError
from albert.io.run_record import Record, RunRecord
from albert.model.config import AlbertConfig
from albert.train.distributed import on_chief
from albert.train.input_positions import (
    POSITIONS_DIR,
    InputPositions,
    remove_interrupted_position_saves,
)
from albert.train.run_dir import lock_run_directory, remove_interrupted_saves

logger = logging.getLogger("albert.train.checkpoint_store")

_CKPT = re.compile(r"^ckpt-(\d+)\.index$")
_UPDATES = "optimizer/updates/.ATTRIBUTES/VARIABLE_VALUE"
_STEP = "step/.ATTRIBUTES/VARIABLE_VALUE"
_WEIGHTS_MARKER = "model/albert/embeddings/word_embeddings/.ATTRIBUTES/VARIABLE_VALUE"


def checkpoint_files(directory: str) -> list[str]:
    """Checkpoint prefixes in `directory`, newest first, found by their .index files (the
    `checkpoint` index may be missing or garbled)."""
    found = []
    for path in glob.glob(os.path.join(directory, "ckpt-*.index")):
        match = _CKPT.match(os.path.basename(path))
        if match:
            found.append((int(match.group(1)), path[:-len(".index")]))
    return [p for _, p in sorted(found, reverse=True)]


class CheckpointStore:
    """Saves and restores one run's checkpoints (rank 0) with every rank's input position
    (`positions`, which the run opens its input through)."""

    def __init__(self, directory: str, trackables: dict, dist, keep: int = 5, config=None):
        if keep < 1:
            raise CheckpointError(f"--keep_checkpoints must be at least 1, got {keep}")
        self.directory = directory
        self.dist = dist
        self.config = config
        self.keep = keep
        self.trackables = dict(trackables)
        self.checkpoint = tf.train.Checkpoint(**trackables)
        self.positions = InputPositions(directory, dist, keep)

        def prepare():
            lock_run_directory(directory)  # before the clean-up, which a running save would lose
            self._remove_interrupted_saves()
            self._check_index()

        on_chief(dist, prepare)  # a directory in use stops every rank, not only rank 0
        self.manager = tf.train.CheckpointManager(self.checkpoint, directory, max_to_keep=keep)

    # -- housekeeping -----------------------------------------------------------------------------

    def _remove_interrupted_saves(self) -> None:
        remove_interrupted_saves(self.directory)
        remove_interrupted_position_saves(self.directory)

    def _check_index(self) -> None:
        """A garbled `checkpoint` index would hide readable checkpoints: set it aside (the
        checkpoints are then found by their files) instead of starting over from step 0."""
        index = os.path.join(self.directory, "checkpoint")
        if not os.path.exists(index):
            return
        try:
            tf.train.get_checkpoint_state(self.directory)
        except Exception as e:  # noqa: BLE001 - text-format parse errors come in several types
            aside = f"{index}.unreadable-{int(time.time())}"
            os.replace(index, aside)
            logger.warning("checkpoint index %s is unreadable (%s); moved to %s, checkpoints are "
                           "found by their files", index, str(e).splitlines()[0][:120], aside)

    def has_checkpoints(self) -> bool:
        return bool(checkpoint_files(self.directory))

    def discard(self) -> None:
        """--overwrite_checkpoint_dir: remove this directory's run (checkpoints, record, input
        positions, final and best exports, in-run SQuAD evaluations), nothing else."""
        for path in checkpoint_files(self.directory):
            for f in glob.glob(path + ".*"):
                os.remove(f)
        RunRecord(self.directory).remove()
        for name in ("checkpoint", "config.json"):
            path = os.path.join(self.directory, name)
            if os.path.exists(path):
                os.remove(path)
        # squad/: the in-run SQuAD evaluations of the run discarded (run_pretraining); its
        # feature cache (squad_cache/) is the data's, not the run's, and stays.
        for name in (POSITIONS_DIR, "final", "best", "squad"):
            shutil.rmtree(os.path.join(self.directory, name), ignore_errors=True)
        # A fresh manager: the old one still lists the removed checkpoints.
        self.manager = tf.train.CheckpointManager(self.checkpoint, self.directory,
                                                  max_to_keep=self.keep)

    # -- save -------------------------------------------------------------------------------------

    def save(self, step: int) -> str | None:
        """Every rank saves its input position, then rank 0 the checkpoint, so a checkpoint on
        disk always has its input positions beside it. Returns the checkpoint's path (rank 0)."""
        try:
            self.positions.save(step)
            self.dist.barrier()
            if not self.dist.is_chief:
                return None
            os.makedirs(self.directory, exist_ok=True)
            if self.config is not None:
                path = os.path.join(self.directory, "config.json")
                if not os.path.exists(path):
                    self.config.to_json_file(path + ".tmp")
                    os.replace(path + ".tmp", path)
            saved = self.manager.save(checkpoint_number=step)
        except (tf.errors.ResourceExhaustedError, tf.errors.UnknownError, OSError) as e:
            self._remove_interrupted_saves()
            previous = self.manager.latest_checkpoint if self.dist.is_chief else None
            raise CheckpointError(
                f"saving the step {step} checkpoint in {self.directory} failed "
                f"({str(e).splitlines()[0][:200]}); is the disk full? The previous checkpoint "
                f"({previous or 'none'}) is kept: free space and run the same command to resume"
            ) from None
        logger.info("saved checkpoint %s", saved)
        return saved

    # -- restore ----------------------------------------------------------------------------------

    def check_config(self, directory: str) -> None:
        """Refuse a checkpoint trained with another model config (dropout aside, which changes no
        weight): its weights would load into the wrong shapes, or worse, the right ones."""
        path = os.path.join(directory, "config.json")
        if self.config is None or not os.path.exists(path):
            return
        saved = AlbertConfig.from_json_file(path)
        diffs = [f"{k}: checkpoint {getattr(saved, k)!r} vs this run {getattr(self.config, k)!r}"
                 for k in saved.__dataclass_fields__
                 if getattr(saved, k) != getattr(self.config, k) and not k.endswith("dropout_prob")]
        if diffs:
            raise CheckpointError(f"checkpoint in {directory} was trained with a different model "
                                  f"config: " + "; ".join(diffs))

    def restore_latest(self, directory: str | None = None,
                       partial: str | None = None) -> str | None:
        """Restore the newest readable checkpoint in `directory` (default: ours). None if none."""
        directory = directory or self.directory
        if not tf.io.gfile.isdir(directory):
            return None
        self.check_config(directory)
        candidates = checkpoint_files(directory)
        state = None
        try:
            state = tf.train.get_checkpoint_state(directory)
        except Exception:  # noqa: BLE001 - a garbled index: the files still tell
            pass
        if candidates and state is None:
            logger.warning("%s has no readable checkpoint index; found %d checkpoint(s) by their "
                           "files", directory, len(candidates))
        for path in candidates:
            try:
                self.restore(path, partial=partial)
                return path
            except CheckpointError:
                raise
            # A truncated data file surfaces as IndexError ("Read less bytes than requested").
            except (tf.errors.OpError, IndexError, KeyError) as e:
                logger.warning("checkpoint %s is unreadable (%s); trying the previous one",
                               path, str(e).splitlines()[0][:200])
        if candidates:
            raise CheckpointError(f"no readable checkpoint in {directory} (tried "
                                  f"{len(candidates)})")
        return None

    def restore(self, path: str, partial: str | None = None) -> None:
        """partial: None restores everything (a resume); "weights" the model's weights, whose
        heads may differ (a pretraining checkpoint into a QA model); "weights+optimizer" also the
        optimizer's moments (a second pretraining phase), but not the step counters."""
        if tf.io.gfile.isdir(path):
            found = self.restore_latest(path, partial=partial)
            if found is None:
                raise CheckpointError(f"--checkpoint_path {path} holds no checkpoint")
            return
        self.check_config(os.path.dirname(path))
        names = {name for name, _ in tf.train.list_variables(path)}
        optimizer = self.trackables.get("optimizer")
        # Checkpoints written before the optimizer counted its updates hold m and v only; their
        # moments had seen as many updates as the run's step.
        legacy = (optimizer is not None and hasattr(optimizer, "moments_only")
                  and any(n.startswith("optimizer/") for n in names)
                  and _UPDATES not in names)
        if partial:
            if _WEIGHTS_MARKER not in names:
                raise CheckpointError(f"checkpoint {path} holds no ALBERT model weights")
            parts = {"model": self.checkpoint.model}
            if partial == "weights+optimizer":
                if not any(n.startswith("optimizer/") for n in names):
                    raise CheckpointError(f"checkpoint {path} holds no optimizer state "
                                          "(--load_optimizer_state)")
                parts["optimizer"] = optimizer.moments_only() if legacy else optimizer
            status = tf.train.Checkpoint(**parts).read(path)
            if partial == "weights+optimizer":
                status.assert_existing_objects_matched()
                if legacy:
                    self._count_legacy_updates(path, names)
            status.expect_partial()
            return
        parts = dict(self.trackables)
        if legacy:
            parts["optimizer"] = optimizer.moments_only()
        try:
            status = tf.train.Checkpoint(**parts).read(path)
            status.expect_partial()  # the file's save_counter, which a fresh Checkpoint lacks
            status.assert_existing_objects_matched()
        except (AssertionError, ValueError) as e:
            # The file is readable but does not fit this model: a structural mismatch, never
            # "unreadable" (which would silently fall back to an older checkpoint).
            raise CheckpointError(f"checkpoint {path} does not match this model and optimizer "
                                  f"({str(e).splitlines()[0][:300]})") from None
        if legacy:
            self._count_legacy_updates(path, names)

    def _count_legacy_updates(self, path: str, names: set) -> None:
        updates = legacy_updates(path, names)
        self.trackables["optimizer"].updates.assign(updates)
        logger.info("checkpoint %s predates the optimizer's update count: its moments count as "
                    "%d updates for the bias correction", path, updates)


def legacy_updates(path: str, names: set, _seen: frozenset = frozenset()) -> int:
    """The updates the moments of `path`, a checkpoint written before the optimizer counted
    them, have seen: its run's step, plus, when that run began with another checkpoint's moments
    (--load_optimizer_state: a second pretraining phase, whose step starts at 0), the updates
    of those. CheckpointError when that checkpoint is gone: a guess would size every corrected
    update of the run wrongly."""
    updates = int(tf.train.load_variable(path, _STEP)) if _STEP in names else 0
    start = (RunRecord(os.path.dirname(path)).load() or Record()).start or {}
    source = start.get("checkpoint_path")
    if not start.get("load_optimizer_state") or not source:
        return updates
    earlier = source
    if tf.io.gfile.isdir(source):  # the newest there, as the run took it when it began
        earlier = next(iter(checkpoint_files(source)), None)
    if earlier is None or not tf.io.gfile.exists(earlier + ".index") \
            or os.path.realpath(earlier) in _seen:
        raise CheckpointError(
            f"checkpoint {path} predates the optimizer's update count and its run began with "
            f"the optimizer moments of {source} (--load_optimizer_state), which holds no "
            "checkpoint now: how many updates those moments had seen is unknown. Put that "
            "checkpoint back and run the same command again, or start a new run from these "
            f"weights alone (--load_from checkpoint --checkpoint_path {path}, without "
            "--load_optimizer_state)")
    earlier_names = {name for name, _ in tf.train.list_variables(earlier)}
    if _UPDATES in earlier_names:
        return updates + int(tf.train.load_variable(earlier, _UPDATES))
    return updates + legacy_updates(earlier, earlier_names, _seen | {os.path.realpath(path)})
