"""Each rank's input position (albert.train.input_positions): kept per rank and batch-plan layout,
and a damaged or missing one reported as absent so the caller replays the stream instead."""

import os

import tensorflow as tf

from albert.train.batch_plan import BatchPlan
from albert.train.distributed import Distributed
from albert.train.input_positions import InputPositions, remove_interrupted_position_saves

LAYOUT = BatchPlan(2, 2, 1)


class Rank(Distributed):
    def __init__(self, rank):
        self.rank, self.size = rank, 2


def counting(skip=0):
    """Records 0, 1, 2, ... in batches of 2, `skip` records in (as a runner's make_data)."""
    return tf.data.Dataset.range(skip, 1000).batch(2)


def first_record(iterator) -> int:
    return int(next(iterator)[0])


def test_each_rank_restores_its_own_position(tmp_path):
    saved = {}
    for rank, advance in ((0, 3), (1, 5)):
        positions = InputPositions(str(tmp_path), Rank(rank))
        batches = iter(counting())
        positions.track(batches, LAYOUT)
        for _ in range(advance):
            next(batches)
        positions.save(4)
        saved[rank] = first_record(batches)
    assert sorted(os.listdir(tmp_path / "data" / "2x2x1")) == ["rank-0", "rank-1"]
    for rank in (0, 1):
        positions = InputPositions(str(tmp_path), Rank(rank))
        batches = iter(counting())
        positions.track(batches, LAYOUT)
        assert positions.restore(4)
        assert first_record(batches) == saved[rank]


def test_a_damaged_position_is_absent_and_open_replays_past_the_consumed_records(tmp_path,
                                                                                caplog):
    positions = InputPositions(str(tmp_path), Rank(0))
    batches = positions.open(counting, LAYOUT, resumed_updates=0, step=0)
    for _ in range(3):
        next(batches)
    positions.save(3)
    directory = positions.directory(LAYOUT)
    for name in os.listdir(directory):
        if name.startswith("ckpt-3.data"):
            with open(os.path.join(directory, name), "r+b") as f:
                f.truncate(8)
    again = InputPositions(str(tmp_path), Rank(0))
    with caplog.at_level("WARNING"):
        resumed = again.open(counting, LAYOUT, resumed_updates=3, step=3)
    assert "is unreadable" in caplog.text and "replaying the input stream past 6" in caplog.text
    # 3 updates x micro-batch 2 x accumulation 1 records were consumed: the stream goes on at 6.
    assert first_record(resumed) == 6


def test_nothing_tracked_saves_nothing_and_restores_nothing(tmp_path):
    positions = InputPositions(str(tmp_path), Rank(0))
    positions.save(1)
    assert not os.path.exists(tmp_path / "data") and not positions.restore(1)


def test_only_the_newest_positions_are_kept(tmp_path):
    positions = InputPositions(str(tmp_path), Rank(0), keep=2)
    batches = iter(counting())
    positions.track(batches, LAYOUT)
    for step in (1, 2, 3):
        next(batches)
        positions.save(step)
    kept = sorted(n for n in os.listdir(positions.directory(LAYOUT)) if n.endswith(".index"))
    assert kept == ["ckpt-2.index", "ckpt-3.index"]


def test_interrupted_saves_are_removed_from_every_ranks_positions_only(tmp_path):
    leftovers = [tmp_path / "data" / "2x2x1" / f"rank-{r}" / "ckpt-5_temp" for r in (0, 1)]
    for path in leftovers:
        path.mkdir(parents=True)
    other = tmp_path / "ckpt-5_temp"  # the store's own: not this module's to remove
    other.mkdir()
    remove_interrupted_position_saves(str(tmp_path))
    assert not any(path.exists() for path in leftovers) and other.exists()
