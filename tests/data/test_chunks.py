"""albert.data.chunks: raw documents -> keyed, framed records in the shard their key picks."""

import pytest

from albert.data.chunks import KEY, GeneratorSettings, make_chunk
from albert.data.pretraining import InstanceMaker, InstanceOptions
from albert.data.tfrecord import framed_length

DOC = " ".join(f"Statement {i} tells the interpreter what to do next." for i in range(12))


@pytest.fixture(scope="module")
def maker(sample_vocab):
    return InstanceMaker(sample_vocab, InstanceOptions(32, 5))


def _settings(sample_vocab, **kw):
    return GeneratorSettings(**{
        "spm_model": sample_vocab, "options": InstanceOptions(32, 5), "input_format": "line",
        "text_field": "text", "docs_per_chunk": 8, "dupe_factor": 2, "seed": 1,
        "validation_fraction": 0.0, "shards": (4, 1), **kw})


def _entries(blob):
    out, offset = [], 0
    while offset < len(blob):
        end = offset + KEY.size + framed_length(blob, offset + KEY.size)
        out.append(blob[offset:end])
        offset = end
    return out


def test_entries_are_keyed_into_their_shard_and_counted(maker, sample_vocab):
    settings = _settings(sample_vocab)
    out = make_chunk(maker, settings, 3, 5, 0, [DOC, "", "x"])
    assert out.stats.documents == 2 and out.stats.empty_documents == 1
    assert out.short_documents == 1  # the one-token "x" makes no sentence pair
    records = 0
    serials = set()
    for (split, shard), (count, blob) in out.buckets.items():
        assert split == 0 and 0 <= shard < 4
        entries = _entries(blob)
        assert len(entries) == count
        for entry in entries:
            draw, file_index, chunk_index, serial = KEY.unpack_from(entry)
            assert (draw * 4) >> 64 == shard and (file_index, chunk_index) == (3, 5)
            serials.add(serial)
        records += count
    assert records > 0 and serials == set(range(records))  # unique keys: the sort never ties
    assert out.tokens > out.masked > 0


def test_chunks_are_seeded_and_validation_takes_whole_documents(maker, sample_vocab):
    settings = _settings(sample_vocab)
    docs = [DOC.replace("Statement", f"Line{j}") for j in range(6)]
    assert make_chunk(maker, settings, 0, 0, 0, docs).buckets == \
        make_chunk(maker, settings, 0, 0, 0, docs).buckets
    everything = make_chunk(maker, _settings(sample_vocab, validation_fraction=0.999), 0, 0, 0,
                            docs)
    assert {split for split, _ in everything.buckets} == {1}
