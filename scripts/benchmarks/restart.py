"""--restart_cost: what putting the input stream back where a run stopped costs, by restoring
the saved iterator state (what run_pretraining does) against replaying the consumed records.
Each case runs in a fresh process (the hidden --restart_case), as a restarted run would."""

from __future__ import annotations

import os
import tempfile
import time

from benchmarks.relaunch import drop_flag, rerun


def restart_case(args) -> dict:
    """One restart, measured in a fresh process: consume `--restart_case` batches, save the
    iterator as a checkpoint would, then time (a) a new pipeline restored from that state and
    (b) a new pipeline that skips the consumed records, each up to its first batch."""
    import tensorflow as tf

    from albert.data.reader import pretraining_dataset

    def make(skip=0):
        return pretraining_dataset(args.input_pipeline, args.per_gpu_batch_size,
                                   args.max_seq_length, args.max_predictions_per_seq, seed=1,
                                   shuffle_buffer=10_000, skip_records=skip)

    batches = args.restart_case
    it = iter(make())
    for _ in range(batches):
        next(it)
    with tempfile.TemporaryDirectory() as tmp:
        path = tf.train.Checkpoint(data=it).write(os.path.join(tmp, "ckpt"))
        state_bytes = sum(os.path.getsize(os.path.join(tmp, f)) for f in os.listdir(tmp))
        expected = next(it)["input_ids"].numpy()
        del it
        start = time.perf_counter()
        restored = iter(make())
        status = tf.train.Checkpoint(data=restored).read(path)
        status.expect_partial()
        first = next(restored)["input_ids"].numpy()
        restore_s = time.perf_counter() - start
    start = time.perf_counter()
    replayed = next(iter(make(batches * args.per_gpu_batch_size)))["input_ids"].numpy()
    replay_s = time.perf_counter() - start
    return {"records": batches * args.per_gpu_batch_size, "restore_s": restore_s,
            "replay_s": replay_s, "state_mb": state_bytes / 1e6,
            "same_next_batch": bool((first == expected).all() and (replayed == expected).all())}


def bench_restart(args, argv) -> dict:
    """Two restart cases, after 10 updates and after --restart_cost records, each in a fresh
    process: a process that had just read the records would restore from warm caches."""
    inner = drop_flag(argv, "--restart_cost")
    return {"restart": [rerun([*inner, "--no_step", "--restart_case", str(batches)])["restart"]
                        for batches in (10, -(-args.restart_cost // args.per_gpu_batch_size))]}
