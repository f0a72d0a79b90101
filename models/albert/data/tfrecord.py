"""Writing TFRecord files without TensorFlow (the data generator must not import it).

Format: for each record, uint64 length, masked CRC32C of the length, the bytes, masked CRC32C of the
bytes (all little-endian). GZIP files are the whole stream gzip-compressed, which is what
TFRecordDataset(compression_type="GZIP") reads. `frame` builds one framed record, so worker
processes can do the checksums and the writer only moves bytes.
"""

from __future__ import annotations

import gzip
import struct

import google_crc32c

HEADER_BYTES = 12  # uint64 length + its masked CRC
FOOTER_BYTES = 4  # masked CRC of the data


def masked_crc(data: bytes) -> int:
    """TFRecord's masked CRC32C of `data` (what the framing stores, and the reader checks)."""
    crc = google_crc32c.value(data)
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def frame(record: bytes) -> bytes:
    """One record in TFRecord framing: len(record) + 16 bytes."""
    length = struct.pack("<Q", len(record))
    return (length + struct.pack("<I", masked_crc(length)) + record
            + struct.pack("<I", masked_crc(record)))


def framed_length(header: bytes | memoryview, offset: int = 0) -> int:
    """Total bytes of the framed record whose header starts at `offset`."""
    return struct.unpack_from("<Q", header, offset)[0] + HEADER_BYTES + FOOTER_BYTES


def open_output(path: str, gzip_compress: bool = False):
    """A binary file for framed records; GZIP-compressed when asked."""
    return gzip.open(path, "wb", compresslevel=6) if gzip_compress else open(path, "wb")


class TFRecordWriter:
    def __init__(self, path: str, gzip_compress: bool = False):
        self._file = open_output(path, gzip_compress)

    def write(self, record: bytes) -> None:
        self._file.write(frame(record))

    def close(self) -> None:
        self._file.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
