"""The run directory (--checkpoint_dir): its lock, its record, and where a run in it starts.

Besides the checkpoint store's files (albert.train.checkpoint_store) and the input positions
(albert.train.input_positions), the directory holds:
  .lock      held by the run working in it, so a second run on it is refused
  run.json   the run record (albert.io.run_record): what the run was started from, its XLA and
             batch plans, its spec, its step and whether it finished
start_state is the start/resume policy: it reads the record and the store, and resumes, initialises
from elsewhere, starts anew, or refuses a command that describes another run.
"""

from __future__ import annotations

import dataclasses
import fcntl
import glob
import logging
import os
import shutil
import socket
import time
from dataclasses import dataclass

from albert.errors import CheckpointError
from albert.io.run_record import RUN_RECORD, Record, RunRecord
from albert.train.distributed import on_chief
from albert.train.run_spec import check_resume

logger = logging.getLogger("albert.train.run_dir")

LOCK_FILE = ".lock"
_held_locks: dict[str, int] = {}  # realpath -> fd: this process's run-directory locks


def mark_finished(directory: str, step: int, dist) -> None:
    """Record that the run reached its last step, so the same command again reports it done."""
    if dist.is_chief:
        RunRecord(directory).update(finished=True, step=step)


def lock_run_directory(directory: str) -> None:
    """Hold an exclusive lock on a run directory for the rest of this process, so a second run
    on it (whose start-up would remove the first one's saves in flight) is refused.

    flock is released by the kernel when the holder exits, however it exits: a lock left by a
    crash is never stale. The file records the holder's pid and host for the message. A
    filesystem without flock (some network mounts) gets a warning and no lock.
    """
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


def release_unused_run_directory(directory: str, created: list[str]) -> None:
    """A start refused before it wrote anything leaves nothing behind: its lock is released
    and the directories taking it made (`created`, deepest first) are removed while empty."""
    fd = _held_locks.pop(os.path.realpath(directory), None)
    if fd is None:
        return
    if os.listdir(directory) == [LOCK_FILE]:
        os.remove(os.path.join(directory, LOCK_FILE))
    os.close(fd)
    for path in created:
        try:
            os.rmdir(path)
        except OSError:
            break


def remove_interrupted_saves(directory: str) -> None:
    """Remove the `*_temp*` files and directories TensorFlow leaves when a save is interrupted:
    the completed saves never refer to them, and a later save of the same number would trip over
    them. Only safe while this process holds the directory's lock."""
    for path in glob.glob(os.path.join(directory, "*_temp*")):
        logger.info("removing %s, left by an interrupted save", path)
        shutil.rmtree(path, ignore_errors=True) if os.path.isdir(path) else os.remove(path)


def set_aside_unscored_best(directory: str, previous: Record | None) -> None:
    """A best/ model whose score the record does not hold (a lost run.json) can be compared with
    no evaluation: moved aside, never replaced by a worse one, and --keep_best starts afresh."""
    best = os.path.join(directory, "best")
    if not os.path.isdir(best) or (previous and previous.best):
        return
    aside = f"{best}.unscored-{time.strftime('%Y%m%d-%H%M%S')}"
    os.replace(best, aside)
    logger.warning("%s holds no score for %s: kept as %s, and --keep_best compares afresh",
                   RUN_RECORD, best, aside)


def describe_start(started_from: dict) -> str:
    """A run's start as a refusal message names it: "checkpoint /x (with its optimizer state)"."""
    where = started_from.get("load_from", "?")
    if started_from.get("checkpoint_path"):
        where += f" {started_from['checkpoint_path']}"
    if started_from.get("load_optimizer_state"):
        where += " (with its optimizer state)"
    return where


def start_state(trainer, store, *, load_from: str, checkpoint_path: str | None,
                load_optimizer_state: bool = False, overwrite: bool = False,
                record: Record | dict | None = None) -> str:
    """Where a run starts, then rank 0's state to every rank before the first update.

    store: the run's albert.train.checkpoint_store.CheckpointStore. Returns "resumed" (this
    --checkpoint_dir's own latest checkpoint), "initialised" (weights, and with
    load_optimizer_state the optimizer moments, of --checkpoint_path) or "new" (the model as
    built: scratch or a pretrained directory), the same on every rank.

    The directory's run record says what its run was started from. The same start resumes; a
    different one is refused (say --overwrite_checkpoint_dir to discard the old run, or use a new
    --checkpoint_dir), so one experiment never silently continues another. `record` holds the
    entries this run writes into the record (its start under "started_from", plans, ...).
    """
    new = record if isinstance(record, Record) else Record.from_json(dict(record or {}))
    if new.started_from is None:
        new = dataclasses.replace(new, started_from={"load_from": load_from,
                                                     "checkpoint_path": checkpoint_path})
    start = Start(load_from, checkpoint_path, load_optimizer_state, overwrite)
    # Decided on rank 0; a refusal there stops every rank with its message.
    how, bias_correction = on_chief(trainer.dist, lambda: decide_start(trainer, store, new, start))
    if bias_correction is not None and hasattr(trainer.optimizer, "bias_correction"):
        # Before the update is traced, on every rank: the form the run goes on with (a run
        # recorded before bias correction existed continues uncorrected).
        trainer.optimizer.bias_correction = bias_correction
    trainer.broadcast_state()
    return how


@dataclass(frozen=True)
class Start:
    """What the command asks the run to start from, and whether it discards the directory's."""
    load_from: str
    checkpoint_path: str | None
    load_optimizer_state: bool
    overwrite: bool


def decide_start(trainer, store, new: Record, start: Start) -> tuple:
    """Rank 0's decision, recorded: (how the run starts, the bias correction it goes on with)."""
    directory = store.directory
    previous = discard_if_overwriting(store, start.overwrite)
    check_same_start(store, previous, new.started_from)
    how, spec = restore(trainer, store, previous, new.spec, start)
    new = dataclasses.replace(new, spec=spec)
    if how != "resumed":
        # A best evaluation of an attempt that left no checkpoint is not this run's.
        shutil.rmtree(os.path.join(directory, "best"), ignore_errors=True)
    RunRecord(directory).save(merged_record(previous, new, how, int(trainer.step)))
    return how, (new.spec or {}).get("bias_correction")


def discard_if_overwriting(store, overwrite: bool) -> Record | None:
    """The directory's record, None once --overwrite_checkpoint_dir discarded its run (even an
    unreadable record: it goes with the rest, as asked)."""
    try:
        previous = RunRecord(store.directory).load()
        unreadable = False
    except CheckpointError:
        if not overwrite:
            raise
        previous, unreadable = None, True
    if overwrite and (previous is not None or unreadable or store.has_checkpoints()):
        logger.warning("--overwrite_checkpoint_dir: discarding the run in %s", store.directory)
        store.discard()
        return None
    return previous


def check_same_start(store, previous: Record | None, started_from: dict | None) -> None:
    """Refuse checkpoints of a run started from elsewhere; checkpoints with no record of their
    start are resumed as this command's run."""
    if not store.has_checkpoints():
        return
    directory = store.directory
    if previous is None:
        logger.warning("%s has checkpoints but no run record (%s): resuming them as this "
                       "command's run, with its flags", directory, RUN_RECORD)
        return
    before = previous.start
    if before is None:
        logger.warning("%s records no start (%s): resuming its checkpoints as this "
                       "command's run", directory, RUN_RECORD)
    elif before != started_from:
        raise CheckpointError(
            f"--checkpoint_dir {directory} holds a run started from "
            f"{describe_start(before)}; this command starts from "
            f"{describe_start(started_from)}. Use a new --checkpoint_dir, or add "
            f"--overwrite_checkpoint_dir to discard that run")


def restore(trainer, store, previous: Record | None, spec: dict | None, start: Start) -> tuple:
    """Restore this directory's latest checkpoint (`spec` checked against the record) or
    --checkpoint_path's: ("resumed", "initialised" or "new"; the spec the run goes on with)."""
    directory = store.directory
    resumed = store.restore_latest()
    if resumed:
        if spec is not None:
            spec = check_resume(previous, spec, directory, int(trainer.step))
        set_aside_unscored_best(directory, previous)
        logger.info("resuming from %s", resumed)
        return "resumed", spec
    if start.load_from != "checkpoint":
        return "new", spec
    if not start.checkpoint_path:
        raise CheckpointError(f"--load_from checkpoint: no checkpoint in --checkpoint_dir "
                              f"{directory} and no --checkpoint_path given")
    store.restore(start.checkpoint_path, partial="weights+optimizer"
                  if start.load_optimizer_state else "weights")
    logger.info("initialised from %s%s", start.checkpoint_path,
                " (weights and optimizer moments)" if start.load_optimizer_state else "")
    return "initialised", spec


def merged_record(previous: Record | None, new: Record, how: str, step: int) -> Record:
    """The record the run goes on with: the previous one's entries under this run's; a best
    only from the run's own checkpoints, finished only as far as it went, its first XLA plan."""
    merged = (previous or Record()).merged(new)
    if how != "resumed":
        merged.best = None
    if how == "resumed" and previous is not None and previous.finished \
            and step >= (new.total_steps or 0):
        merged.finished = True  # the same command again: still finished
    if previous is not None and previous.xla is not None:
        merged.xla = previous.xla  # the plan the run started with stays its plan
    return merged
