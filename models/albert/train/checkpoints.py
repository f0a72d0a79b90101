"""Checkpoints and where a run starts: resume, initialise from elsewhere, or refuse.

A checkpoint directory holds, besides TensorFlow's `ckpt-N` files and `checkpoint` index:
  config.json        the model config (a resume with another config is refused)
  run.json           the run record: what the run was started from, its XLA and batch plans, its
                     step and whether it finished
  data/rank-R/       each rank's input-pipeline position at every checkpoint (tf.data iterator
                     state), so a restart continues the exact input stream at a cost that does not
                     grow with progress
TensorFlow writes a checkpoint's files under temporary names and updates the `checkpoint` index
last, so a crash mid-save leaves the previous checkpoint as the latest; an unreadable newest
checkpoint is skipped for the one before it; a missing or garbled index is rebuilt from the files.
"""

from __future__ import annotations

import glob
import json
import logging
import os
import re
import shutil
import time

import tensorflow as tf

from albert.errors import CheckpointError  # the one class; importable from here too
from albert.train.distributed import on_chief

logger = logging.getLogger("albert.train.checkpoints")

RUN_RECORD = "run.json"
_CKPT = re.compile(r"^ckpt-(\d+)\.index$")
_UPDATES = "optimizer/updates/.ATTRIBUTES/VARIABLE_VALUE"
_STEP = "step/.ATTRIBUTES/VARIABLE_VALUE"


def read_run_record(directory: str) -> dict | None:
    path = os.path.join(directory, RUN_RECORD)
    if not os.path.exists(path):
        return None
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, json.JSONDecodeError) as e:
        raise CheckpointError(f"{path} is unreadable ({e}); use a new --checkpoint_dir or "
                              "--overwrite_checkpoint_dir") from None


def write_run_record(directory: str, record: dict) -> None:
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, RUN_RECORD)
    with open(path + ".tmp", "w", encoding="utf-8") as f:
        json.dump(record, f, indent=2)
    os.replace(path + ".tmp", path)


def checkpoint_files(directory: str) -> list[str]:
    """Checkpoint prefixes in `directory`, newest first, found by their .index files."""
    found = []
    for path in glob.glob(os.path.join(directory, "ckpt-*.index")):
        match = _CKPT.match(os.path.basename(path))
        if match:
            found.append((int(match.group(1)), path[:-len(".index")]))
    return [p for _, p in sorted(found, reverse=True)]


def describe_start(started_from: dict) -> str:
    where = started_from.get("load_from", "?")
    if started_from.get("checkpoint_path"):
        where += f" {started_from['checkpoint_path']}"
    if started_from.get("load_optimizer_state"):
        where += " (with its optimizer state)"
    return where


LOCK_FILE = ".lock"
_held_locks: dict[str, int] = {}  # realpath -> fd: this process's run-directory locks


def lock_run_directory(directory: str) -> None:
    """Hold an exclusive lock on a run directory for the rest of this process, so a second run
    on it (whose start-up would remove the first one's saves in flight) is refused.

    flock is released by the kernel when the holder exits, however it exits: a lock left by a
    crash is never stale. The file records the holder's pid and host for the message. A
    filesystem without flock (some network mounts) gets a warning and no lock.
    """
    import fcntl
    import socket

    os.makedirs(directory, exist_ok=True)
    key = os.path.realpath(directory)
    if key in _held_locks:
        return
    path = os.path.join(directory, LOCK_FILE)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = os.pread(fd, 512, 0).decode("utf-8", "replace").strip() or "another process"
        os.close(fd)
        raise CheckpointError(f"--checkpoint_dir {directory} is in use by another run ({holder}); "
                              "wait for it to end, or use another --checkpoint_dir") from None
    except OSError as e:
        os.close(fd)
        logger.warning("cannot lock %s (%s): nothing stops a second run on this directory",
                       directory, e.strerror)
        return
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"pid {os.getpid()} on host {socket.gethostname()}, since "
                  f"{time.strftime('%Y-%m-%d %H:%M:%S')}\n".encode(), 0)
    _held_locks[key] = fd


class CheckpointHandler:
    """Saves and restores one run's checkpoints (rank 0) and input positions (every rank)."""

    def __init__(self, directory: str, trackables: dict, dist, keep: int = 5, config=None):
        if keep < 1:
            raise CheckpointError(f"--keep_checkpoints must be at least 1, got {keep}")
        self.directory = directory
        self.dist = dist
        self.config = config
        self.keep = keep
        self.trackables = dict(trackables)
        self.checkpoint = tf.train.Checkpoint(**trackables)
        self._data_manager = None
        def prepare():
            lock_run_directory(directory)  # before the clean-up, which a running save would lose
            self._clean_temporaries(directory)
            self._check_index()

        on_chief(dist, prepare)  # a directory in use stops every rank, not only rank 0
        self.manager = tf.train.CheckpointManager(self.checkpoint, directory, max_to_keep=keep)

    # -- housekeeping -----------------------------------------------------------------------------

    @staticmethod
    def _clean_temporaries(directory: str) -> None:
        """Remove what interrupted saves left (TensorFlow's `*_temp` directories, our `.tmp`)."""
        for path in glob.glob(os.path.join(directory, "*_temp*")) + glob.glob(
                os.path.join(directory, "data", "*", "rank-*", "*_temp*")):
            logger.info("removing %s, left by an interrupted save", path)
            shutil.rmtree(path, ignore_errors=True) if os.path.isdir(path) else os.remove(path)

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
        """--overwrite_checkpoint_dir: remove this directory's run (checkpoints, record, data
        positions, final and best exports), nothing else."""
        for path in checkpoint_files(self.directory):
            for f in glob.glob(path + ".*"):
                os.remove(f)
        for name in ("checkpoint", "config.json", RUN_RECORD):
            path = os.path.join(self.directory, name)
            if os.path.exists(path):
                os.remove(path)
        for name in ("data", "final", "best"):
            shutil.rmtree(os.path.join(self.directory, name), ignore_errors=True)
        self.manager = tf.train.CheckpointManager(self.checkpoint, self.directory,
                                                  max_to_keep=self.keep)

    # -- input positions --------------------------------------------------------------------------

    def track_data(self, iterator, layout=None) -> None:
        """Save this rank's tf.data iterator with every checkpoint (each rank its own), under the
        batch plan's layout (ranks x micro-batch x accumulation): a restart with another plan
        finds no position of its own and replays instead of reading a wrong one."""
        name = "data"
        if layout is not None:
            name = os.path.join(name, f"{layout.ranks}x{layout.micro_batch}x{layout.accumulation}")
        directory = os.path.join(self.directory, name, f"rank-{self.dist.rank}")
        self._clean_temporaries(directory)
        self._data_manager = tf.train.CheckpointManager(
            tf.train.Checkpoint(data=iterator), directory, max_to_keep=self.keep)

    def restore_data(self, step: int) -> bool:
        """Put the tracked iterator where it was at checkpoint `step`; False if that position
        was not saved (another number of ranks, an older run, a lost file)."""
        if self._data_manager is None:
            return False
        path = os.path.join(self._data_manager.directory, f"ckpt-{step}")
        if not tf.io.gfile.exists(path + ".index"):
            return False
        try:
            status = self._data_manager.checkpoint.read(path)
            status.expect_partial()  # the file's save_counter
            status.assert_existing_objects_matched()
        except (tf.errors.OpError, AssertionError, ValueError) as e:
            logger.warning("input position %s is unreadable (%s)", path,
                           str(e).splitlines()[0][:200])
            return False
        return True

    def open_input(self, make_data, layout, resumed_updates: int, step: int):
        """An iterator over make_data(skip_records), tracked, at this run's input position: the
        start; the position saved with checkpoint `step`; or, when none was saved under this
        layout (another batch plan, an older run), the stream replayed past the records the
        resumed `resumed_updates` consumed. The pipelines are seeded and deterministic, so both
        ways continue the same trajectory."""
        batches = iter(make_data(0))
        self.track_data(batches, layout=layout)
        if resumed_updates <= 0:
            return batches
        if self.restore_data(step):
            logger.info("rank %d: input position of step %d restored", self.dist.rank, step)
            return batches
        consumed = resumed_updates * layout.accumulation * layout.micro_batch
        logger.warning("rank %d: no saved input position for step %d (another batch plan, or an "
                       "older run); replaying the input stream past %d records", self.dist.rank,
                       step, consumed)
        batches = iter(make_data(consumed))
        self.track_data(batches, layout=layout)
        return batches

    # -- save -------------------------------------------------------------------------------------

    def save(self, step: int) -> str | None:
        """Every rank saves its input position, then rank 0 the checkpoint, so a checkpoint on
        disk always has its input positions beside it."""
        try:
            if self._data_manager is not None:
                self._data_manager.save(checkpoint_number=step)
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
            self._clean_temporaries(self.directory)
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
        from albert.model.config import AlbertConfig

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
            marker = "model/albert/embeddings/word_embeddings/.ATTRIBUTES/VARIABLE_VALUE"
            if marker not in names:
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
        updates = int(tf.train.load_variable(path, _STEP)) if _STEP in names else 0
        self.trackables["optimizer"].updates.assign(updates)
        logger.info("checkpoint %s predates the optimizer's update count: its moments count as "
                    "%d updates (the run's step) for the bias correction", path, updates)


def start_state(trainer, checkpoints: CheckpointHandler, *, load_from: str,
                checkpoint_path: str | None, load_optimizer_state: bool = False,
                overwrite: bool = False, record: dict | None = None) -> str:
    """Where a run starts, then rank 0's state to every rank before the first update.

    Returns "resumed" (this --checkpoint_dir's own latest checkpoint), "initialised" (weights, and
    with load_optimizer_state the optimizer moments, of --checkpoint_path) or "new" (the model as
    built: scratch or a pretrained directory), the same on every rank.

    The directory's run record says what its run was started from. The same start resumes; a
    different one is refused (say --overwrite_checkpoint_dir to discard the old run, or use a new
    --checkpoint_dir), so one experiment never silently continues another. `record` holds the
    fields this run writes into the record (its start under "started_from", plans, ...).
    """
    record = dict(record or {})
    started_from = record.get("started_from", {"load_from": load_from,
                                               "checkpoint_path": checkpoint_path})

    def decide() -> tuple:
        how = "new"
        directory = checkpoints.directory
        previous = read_run_record(directory)
        if overwrite and (previous or checkpoints.has_checkpoints()):
            logger.warning("--overwrite_checkpoint_dir: discarding the run in %s", directory)
            checkpoints.discard()
            previous = None
        if checkpoints.has_checkpoints() and previous is not None:
            before = previous.get("started_from")
            if before != started_from:
                raise CheckpointError(
                    f"--checkpoint_dir {directory} holds a run started from "
                    f"{describe_start(before or {})}; this command starts from "
                    f"{describe_start(started_from)}. Use a new --checkpoint_dir, or add "
                    f"--overwrite_checkpoint_dir to discard that run")
        elif checkpoints.has_checkpoints():
            logger.warning("%s has checkpoints but no run record (%s): resuming them as this "
                           "command's run", directory, RUN_RECORD)
        resumed = checkpoints.restore_latest()
        if resumed:
            if "spec" in record:
                from albert.train.run_spec import check_resume

                record["spec"] = check_resume(previous, record["spec"], directory,
                                              int(trainer.step))
            logger.info("resuming from %s", resumed)
            how = "resumed"
        elif load_from == "checkpoint":
            if not checkpoint_path:
                raise CheckpointError(f"--load_from checkpoint: no checkpoint in --checkpoint_dir "
                                      f"{directory} and no --checkpoint_path given")
            checkpoints.restore(checkpoint_path, partial="weights+optimizer"
                                if load_optimizer_state else "weights")
            logger.info("initialised from %s%s", checkpoint_path,
                        " (weights and optimizer moments)" if load_optimizer_state else "")
            how = "initialised"
        merged = {**(previous or {}), **record, "started_from": started_from}
        if how != "resumed":
            # A best evaluation of an attempt that left no checkpoint is not this run's.
            merged.pop("best", None)
            shutil.rmtree(os.path.join(directory, "best"), ignore_errors=True)
        if how == "resumed" and (previous or {}).get("finished") \
                and int(trainer.step) >= (record.get("total_steps") or 0):
            merged["finished"] = True  # the same command again: still finished
        if previous and "xla" in previous:
            merged["xla"] = previous["xla"]  # the plan the run started with stays its plan
        write_run_record(directory, merged)
        return how, (record.get("spec") or {}).get("bias_correction")

    # Decided on rank 0; a refusal there stops every rank with its message.
    how, bias_correction = on_chief(trainer.dist, decide)
    if bias_correction is not None and hasattr(trainer.optimizer, "bias_correction"):
        # Before the update is traced, on every rank: the form the run goes on with (a run
        # recorded before bias correction existed continues uncorrected).
        trainer.optimizer.bias_correction = bias_correction
    trainer.broadcast_state()
    return how


def mark_finished(directory: str, step: int, dist) -> None:
    if not dist.is_chief:
        return
    record = read_run_record(directory) or {}
    record.update(finished=True, step=step)
    write_run_record(directory, record)
