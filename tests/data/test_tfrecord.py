"""albert.data.tfrecord: TFRecord framing written without TensorFlow, read back by tf.data."""

import struct

import pytest
import tensorflow as tf

from albert.data.tfrecord import (
    FOOTER_BYTES,
    HEADER_BYTES,
    TFRecordWriter,
    frame,
    framed_length,
)

RECORDS = [b"", b"x", b"hello records", bytes(range(256)) * 40]


@pytest.mark.parametrize("gzip", [False, True])
def test_tf_data_reads_back_the_same_bytes(gzip, tmp_path):
    path = tmp_path / ("part.tfrecord" + (".gz" if gzip else ""))
    with TFRecordWriter(str(path), gzip_compress=gzip) as writer:
        for record in RECORDS:
            writer.write(record)
    ds = tf.data.TFRecordDataset(str(path), compression_type="GZIP" if gzip else "")
    assert [r.numpy() for r in ds] == RECORDS
    if gzip:
        assert path.read_bytes()[:2] == b"\x1f\x8b"
    else:
        assert path.read_bytes() == b"".join(frame(r) for r in RECORDS)


def test_frame_layout_and_framed_length():
    framed = frame(b"abc")
    assert len(framed) == 3 + HEADER_BYTES + FOOTER_BYTES
    assert struct.unpack_from("<Q", framed)[0] == 3 and framed[12:15] == b"abc"
    stream = frame(b"abc") + frame(b"longer record")
    assert framed_length(stream) == len(framed)
    assert framed_length(memoryview(stream), len(framed)) == len(stream) - len(framed)


@pytest.mark.parametrize("where", ["length", "data", "footer"])
def test_a_damaged_byte_is_caught_by_the_checksums(where, tmp_path):
    path = tmp_path / "part.tfrecord"
    with TFRecordWriter(str(path)) as writer:
        writer.write(b"first record")
        writer.write(b"second record")
    data = bytearray(path.read_bytes())
    second = len(frame(b"first record"))
    data[second + {"length": 1, "data": HEADER_BYTES + 2, "footer": len(data) - second - 1}[
        where]] ^= 0x01
    path.write_bytes(bytes(data))
    seen = []
    with pytest.raises(tf.errors.DataLossError):
        for r in tf.data.TFRecordDataset(str(path)):
            seen.append(r.numpy())
    assert seen == [b"first record"]  # the damage is in the second, found there
