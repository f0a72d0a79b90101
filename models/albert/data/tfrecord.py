"""Writing TFRecord files without TensorFlow (the data generator must not import it).

Format: for each record, uint64 length, masked CRC32C of the length, the bytes, masked CRC32C of the
bytes (all little-endian). GZIP files are the whole stream gzip-compressed, which is what
TFRecordDataset(compression_type="GZIP") reads.
"""

from __future__ import annotations

import gzip
import struct

import google_crc32c


def _masked_crc(data: bytes) -> bytes:
    crc = google_crc32c.value(data)
    return struct.pack("<I", (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF)


class TFRecordWriter:
    def __init__(self, path: str, gzip_compress: bool = False):
        self._file = gzip.open(path, "wb", compresslevel=6) if gzip_compress else open(path, "wb")

    def write(self, record: bytes) -> None:
        length = struct.pack("<Q", len(record))
        self._file.write(length + _masked_crc(length) + record + _masked_crc(record))

    def close(self) -> None:
        self._file.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
