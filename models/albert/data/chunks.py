"""create_pretraining_data's unit of work: a chunk of raw documents -> keyed, framed pretraining
records, grouped by the shard their key falls in.

Chunk c of file f, duplicate d, uses a random generator seeded by (seed, f, c, d) alone, so what a
chunk makes does not depend on which process made it, or when. Every record gets a random 64-bit
key from that generator: its range picks the shard, its order the record's place in the shard
(albert.data.shuffle).
"""

from __future__ import annotations

import dataclasses
import random
import struct

from albert.data.corpus import ReadStats, finish_document
from albert.data.pretraining import InstanceMaker, InstanceOptions
from albert.data.tfrecord import frame

# A bucket entry is a 20-byte key, then one framed TFRecord. Key: 8 random bytes (the shuffle),
# then file, chunk and record numbers, which make every key unique, so the sort never ties.
KEY = struct.Struct(">QIII")


@dataclasses.dataclass(frozen=True)
class GeneratorSettings:
    """Everything a worker process needs; part of what decides the output bytes."""

    spm_model: str
    options: InstanceOptions
    input_format: str
    text_field: str
    docs_per_chunk: int
    dupe_factor: int
    seed: int
    validation_fraction: float
    shards: tuple[int, int]  # buckets for train, validation


@dataclasses.dataclass
class ChunkOutput:
    buckets: dict  # (split, shard) -> (records, bytes of key + framed record entries)
    stats: ReadStats
    tokens: int = 0
    masked: int = 0
    swapped: int = 0
    short_documents: int = 0


def make_chunk(maker: InstanceMaker, settings: GeneratorSettings, file_index: int,
               chunk_index: int, first_doc: int, raw_docs: list) -> ChunkOutput:
    """Raw documents -> keyed, framed records grouped by the shard their key falls in."""
    out = ChunkOutput({}, ReadStats())
    docs = []
    for i, raw in enumerate(raw_docs):
        sentences = finish_document(raw, out.stats)
        if sentences:
            doc_id = f"{settings.seed}:val:{file_index}:{first_doc + i}"
            to_val = (settings.validation_fraction > 0
                      and random.Random(doc_id).random() < settings.validation_fraction)
            docs.append((maker.tokenize_document(sentences), to_val))
    groups: dict = {}
    serial = 0
    for dupe in range(settings.dupe_factor):
        rng = random.Random(f"{settings.seed}:{file_index}:{chunk_index}:{dupe}")
        for tokens, to_val in docs:
            instances = maker.instances_from_document(tokens, rng)
            if dupe == 0 and not instances:
                out.short_documents += 1
            split = 1 if to_val else 0
            for inst in instances:
                out.tokens += len(inst.input_ids)
                out.masked += len(inst.masked_lm_positions)
                out.swapped += inst.is_swapped
                draw = rng.getrandbits(64)
                shard = (draw * settings.shards[split]) >> 64
                entry = KEY.pack(draw, file_index, chunk_index, serial)
                groups.setdefault((split, shard), []).append(entry + frame(maker.serialize(inst)))
                serial += 1
    out.buckets = {key: (len(entries), b"".join(entries)) for key, entries in groups.items()}
    return out
