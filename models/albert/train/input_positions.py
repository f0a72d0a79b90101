"""Each rank's input-pipeline position, saved with every checkpoint, so a restart continues the
exact input stream at a cost that does not grow with progress.

The positions are tf.data iterator states under the run directory:
  data/<ranks>x<micro-batch>x<accumulation>/rank-R/ckpt-N
one directory per batch-plan layout and rank. A restart under another plan (or an older run, or
a lost file) finds no position of its own and replays the seeded stream instead of reading a
position that counts other batches.
"""

from __future__ import annotations

import glob
import logging
import os

import tensorflow as tf

from albert.train.run_dir import remove_interrupted_saves

logger = logging.getLogger("albert.train.input_positions")

POSITIONS_DIR = "data"


def remove_interrupted_position_saves(run_directory: str) -> None:
    """What interrupted saves left in every rank's positions (run start-up, on rank 0 only,
    which holds the lock: another rank could be saving its own otherwise)."""
    for directory in glob.glob(os.path.join(run_directory, POSITIONS_DIR, "*", "rank-*")):
        remove_interrupted_saves(directory)


class InputPositions:
    """This rank's input position in `run_directory`: tracked, saved at each checkpoint step,
    restored at a resume; `keep` positions are kept, as many as checkpoints."""

    def __init__(self, run_directory: str, dist, keep: int = 5):
        self.run_directory = run_directory
        self.dist = dist
        self.keep = keep
        self._manager = None  # until an iterator is tracked there is nothing to save

    def directory(self, layout) -> str:
        """Where this rank's positions under the batch plan `layout` live."""
        return os.path.join(self.run_directory, POSITIONS_DIR,
                            f"{layout.ranks}x{layout.micro_batch}x{layout.accumulation}",
                            f"rank-{self.dist.rank}")

    def track(self, iterator, layout) -> None:
        """Save `iterator`'s state with every checkpoint from now on, under the batch plan's
        layout (ranks x micro-batch x accumulation)."""
        directory = self.directory(layout)
        remove_interrupted_saves(directory)
        self._manager = tf.train.CheckpointManager(
            tf.train.Checkpoint(data=iterator), directory, max_to_keep=self.keep)

    def save(self, step: int) -> None:
        """This rank's position at checkpoint `step`; the store calls it before its own save."""
        if self._manager is not None:
            self._manager.save(checkpoint_number=step)

    def restore(self, step: int) -> bool:
        """Put the tracked iterator where it was at checkpoint `step`; False if that position
        was not saved (another number of ranks, an older run, a lost file) or is unreadable."""
        if self._manager is None:
            return False
        path = os.path.join(self._manager.directory, f"ckpt-{step}")
        if not tf.io.gfile.exists(path + ".index"):
            return False
        try:
            status = self._manager.checkpoint.read(path)
            status.expect_partial()  # the file's save_counter
            status.assert_existing_objects_matched()
        # A truncated file surfaces as IndexError ("Read less bytes than requested"), as in the
        # checkpoint store.
        except (tf.errors.OpError, AssertionError, ValueError, IndexError) as e:
            logger.warning("input position %s is unreadable (%s)", path,
                           str(e).splitlines()[0][:200])
            return False
        return True

    def open(self, make_data, layout, resumed_updates: int, step: int):
        """An iterator over make_data(skip_records), tracked, at this run's input position: the
        start; the position saved with checkpoint `step`; or, when none was saved under this
        layout (another batch plan, an older run), the stream replayed past the records the
        resumed `resumed_updates` consumed. The pipelines are seeded and deterministic, so both
        ways continue the same trajectory."""
        batches = iter(make_data(0))
        self.track(batches, layout)
        if resumed_updates <= 0:
            return batches
        if self.restore(step):
            logger.info("rank %d: input position of step %d restored", self.dist.rank, step)
            return batches
        consumed = resumed_updates * layout.accumulation * layout.micro_batch
        logger.warning("rank %d: no saved input position for step %d (another batch plan, or an "
                       "older run); replaying the input stream past %d records", self.dist.rank,
                       step, consumed)
        batches = iter(make_data(consumed))
        self.track(batches, layout)
        return batches
