"""albert.data.shuffle: keyed records sorted into shards, in memory or split by key range."""

import random

import pytest

from albert.data.chunks import KEY
from albert.data.shuffle import shard_key_range, write_shard
from albert.data.tfrecord import frame


@pytest.mark.parametrize("shards", [1, 3, 7])
def test_shard_key_ranges_cover_the_64_bit_draws_once(shards):
    ranges = [shard_key_range(j, shards) for j in range(shards)]
    assert ranges[0][0] == 0 and ranges[-1][1] == 1 << 64
    assert all(a[1] == b[0] for a, b in zip(ranges[:-1], ranges[1:], strict=True))
    for draw in (0, 1, (1 << 63) + 5, (1 << 64) - 1):
        j = (draw * shards) >> 64  # the shard a record's draw picks
        lo, hi = ranges[j]
        assert lo <= draw < hi


def _bucket(path, n, seed):
    """n keyed entries in arrival (random) order; returns the records in key order."""
    rng = random.Random(seed)
    entries = []
    for serial in range(n):
        key = KEY.pack(rng.getrandbits(64), 0, 0, serial)
        entries.append((key, f"record {serial}".encode() * rng.randint(1, 5)))
    path.write_bytes(b"".join(k + frame(r) for k, r in entries))
    return [r for _, r in sorted(entries)]


@pytest.mark.parametrize("budget", [1 << 30, 64])
def test_a_bucket_is_written_in_key_order_whatever_the_sort_budget(budget, tmp_path):
    """A budget below the bucket's size splits it by key range first: the same bytes."""
    bucket = tmp_path / "train-00000.bin"
    expected = _bucket(bucket, 300, seed=1)
    out = tmp_path / "part.tfrecord"
    assert write_shard(str(bucket), str(out), False, budget, 0, 1 << 64) == 300
    assert out.read_bytes() == b"".join(frame(r) for r in expected)
    assert not bucket.exists() and sorted(p.name for p in tmp_path.iterdir()) == ["part.tfrecord"]
