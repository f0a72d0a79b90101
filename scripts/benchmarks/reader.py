"""--input_pipeline: the TFRecord reader's records per second, beside the step's sequences per
second (reader_vs_step below 1 would mean the update waits for its input)."""

from __future__ import annotations

import time


def bench_reader(args, step_seq_per_sec: float | None) -> dict:
    """Records per second over 5 s, after 20 batches: the shuffle buffer's first fill is a
    start-up cost, not the rate a long run sees."""
    from albert.data.reader import pretraining_dataset

    ds = pretraining_dataset(args.input_pipeline, args.per_gpu_batch_size, args.max_seq_length,
                             args.max_predictions_per_seq, shuffle_buffer=1000)
    it = iter(ds)
    for _ in range(20):
        next(it)
    n, t = 0, time.perf_counter()
    while time.perf_counter() - t < 5.0:
        next(it)
        n += args.per_gpu_batch_size
    rate = n / (time.perf_counter() - t)
    out = {"reader_records_per_sec": rate}
    if step_seq_per_sec:
        out["reader_vs_step"] = rate / step_seq_per_sec
    return out
