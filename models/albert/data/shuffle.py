"""create_pretraining_data's global shuffle: buckets of keyed records, then shards in key order.

Every record carries a random 64-bit key (albert.data.chunks). The key's range picks its shard (so
every shard is a random sample of the whole corpus, duplicates included), and each shard is
written in key order (so its order is a uniform random permutation). Records are first appended
to one temporary bucket file per shard, in whatever order they arrive; a bucket is then sorted by
key in memory if it fits the sort budget (--shuffle_buffer_mb), or first split by key range into
smaller buckets. Sorting by keys that only depend on the seed makes the output byte-identical for
any number of processes or sort budget, and memory does not grow with the corpus.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable

from albert.data.chunks import KEY, GeneratorSettings
from albert.data.report import Totals, no_instances_message
from albert.data.tfrecord import framed_length, open_output
from albert.errors import DataError, SettingError

SPLITS = ("train", "validation")
_MAX_PARTS = 256  # files open at once when a bucket is split by key range
_WRITE_BATCH = 1 << 20


class Buckets:
    """Unsorted entries of every shard, appended as chunks arrive: one file per (split, shard)."""

    def __init__(self, directory: str):
        self.directory = directory
        self.files: dict = {}
        self.counts: Counter = Counter()

    def path(self, key) -> str:
        split, shard = key
        return os.path.join(self.directory, f"{SPLITS[split]}-{shard:05d}.bin")

    def add(self, buckets: dict) -> None:
        for key, (count, blob) in buckets.items():
            f = self.files.get(key)
            if f is None:
                f = self.files[key] = open(self.path(key), "wb", buffering=1 << 16)
            f.write(blob)
            self.counts[key] += count

    def close(self) -> None:
        files, self.files = self.files, {}
        for f in files.values():
            f.close()


def shard_key_range(shard: int, shards: int) -> tuple[int, int]:
    """The 64-bit draws [lo, hi) that fall in `shard` of `shards` ((draw * shards) >> 64)."""
    return -((-shard << 64) // shards), -((-(shard + 1) << 64) // shards)


def write_shard(bucket: str, out_path: str, gzip: bool, budget: int, lo: int, hi: int) -> int:
    """Write a bucket's records to `out_path` in key order; remove the bucket. Returns records."""
    with open_output(out_path, gzip) as out:
        count = _write_sorted(bucket, lo, hi, out, budget)
    os.remove(bucket)
    return count


def _write_sorted(path: str, lo: int, hi: int, out, budget: int) -> int:
    size = os.path.getsize(path)
    if size <= budget or hi - lo <= _MAX_PARTS:
        with open(path, "rb") as f:
            data = f.read()
        entries = []
        offset = 0
        while offset < len(data):
            start = offset + KEY.size
            end = start + framed_length(data, start)
            entries.append((data[offset:start], start, end))
            offset = end
        entries.sort()  # keys are unique: a uniform random order, the same on every run
        batch, batch_bytes = [], 0
        for _, start, end in entries:
            batch.append(data[start:end])
            batch_bytes += end - start
            if batch_bytes >= _WRITE_BATCH:
                out.write(b"".join(batch))
                batch, batch_bytes = [], 0
        out.write(b"".join(batch))
        return len(entries)
    # Too large to sort in memory: split by key range, then sort the parts in range order, which
    # writes exactly what one in-memory sort would.
    parts = min(_MAX_PARTS, 2 * -(-size // budget))
    width = hi - lo
    bounds = [lo - (-(j * width) // parts) for j in range(parts + 1)]
    part_paths = [f"{path}.{j}" for j in range(parts)]
    part_files = [open(p, "wb", buffering=1 << 16) for p in part_paths]
    try:
        with open(path, "rb", buffering=1 << 20) as f:
            while head := f.read(KEY.size + 8):
                entry = head + f.read(framed_length(head, KEY.size) - 8)
                draw = int.from_bytes(head[:8], "big")
                part_files[((draw - lo) * parts) // width].write(entry)
    finally:
        for f in part_files:
            f.close()
    count = 0
    for j, part in enumerate(part_paths):
        count += _write_sorted(part, bounds[j], bounds[j + 1], out, budget)
        os.remove(part)
    return count


def write_here(tasks: dict) -> dict:
    """Run write_shard tasks in this process: {key: arguments} -> {key: records}."""
    return {key: write_shard(*task) for key, task in tasks.items()}


def write_shards(settings: GeneratorSettings, buckets: Buckets, work: str, gzip: bool,
                 budget: int, totals: Totals,
                 run: Callable[[dict], dict] = write_here) -> dict:
    """The buckets, closed, as shuffled shards under `work`/train and `work`/validation; `run`
    writes them ({key: write_shard arguments} -> {key: records}), here or in worker processes.
    Returns {split: [records per shard]}."""
    buckets.close()
    written = run(_shard_tasks(settings, buckets, work, gzip, budget, totals))
    out: dict = {name: [] for name in SPLITS}
    for split, j in sorted(written):
        out[SPLITS[split]].append(written[(split, j)])
    return out


def _shard_tasks(settings: GeneratorSettings, buckets: Buckets, work: str, gzip: bool,
                 budget: int, totals: Totals) -> dict:
    """(split, output index) -> write_shard arguments, for the non-empty buckets only.

    An empty shard would leave the rank that reads it without data (horovodrun then hangs), so
    shards are numbered over the non-empty buckets, and a warning says when that is fewer.
    """
    per_split = [sum(c for (split, _), c in buckets.counts.items() if split == s) for s in (0, 1)]
    if per_split == [0, 0]:
        raise DataError(no_instances_message(totals))
    if per_split[0] == 0:
        raise SettingError(f"no train instances: all {per_split[1]} went to the validation set; "
                           "use a smaller {validation_fraction}", "validation_fraction")
    ext = ".tfrecord.gz" if gzip else ".tfrecord"
    tasks = {}
    for split, name in enumerate(SPLITS):
        keys = sorted(k for k, count in buckets.counts.items() if k[0] == split and count)
        if not keys:
            continue
        os.makedirs(os.path.join(work, name))
        for j, key in enumerate(keys):
            out = os.path.join(work, name, f"part-{j:05d}-of-{len(keys):05d}{ext}")
            tasks[(split, j)] = (buckets.path(key), out, gzip, budget,
                                 *shard_key_range(key[1], settings.shards[split]))
        if len(keys) < settings.shards[split]:
            records = sum(buckets.counts[k] for k in keys)
            flag = "--num_shards" if split == 0 else "--num_shards / 8 (validation)"
            totals.warn(f"{name}: wrote {len(keys)} shards instead of {settings.shards[split]} "
                        f"({flag}): {records} records leave the others empty, and an empty shard "
                        "stalls the rank that reads it")
    return tasks
