"""Text -> ALBERT pretraining TFRecords (sentence-order prediction + n-gram masking).

    python -m albert.create_pretraining_data --input 'corpus/*.txt' \\
        --spm_model vocab/spiece.model --output_dir data/ --max_seq_length 128 \\
        --max_predictions_per_seq 20 --processes 2

Output: `<output_dir>/train/part-00000-of-000NN.tfrecord` (and `validation/` with
--validation_fraction), google-research BERT/ALBERT feature format, plus `summary.json`.

How it scales: documents stream from the input in order and are grouped into fixed chunks of
--docs_per_chunk documents. Chunk c, duplicate d is processed with a random generator seeded by
(seed, c, d) alone, so the output does not depend on --processes; at most 2 x processes chunks are
in flight, so memory does not grow with the corpus. Records are dealt round-robin to the shards in
chunk order. Shards are written under temporary names and renamed only when the whole run succeeded.
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import dataclasses
import json
import logging
import multiprocessing
import os
import random
import sys
import time
from collections.abc import Iterator

from albert.data.pretraining import InstanceMaker, InstanceOptions
from albert.data.text import FORMATS, ReadStats, expand_inputs, iter_documents
from albert.data.tfrecord import TFRecordWriter

logger = logging.getLogger("albert.create_pretraining_data")


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--input", nargs="+", required=True, help="text files, globs or comma lists")
    p.add_argument("--spm_model", required=True, help="SentencePiece model (spiece.model)")
    p.add_argument("--output_dir", required=True)
    p.add_argument("--input_format", choices=FORMATS, default="auto",
                   help="line: one document per line; blank: one sentence per line, documents "
                        "separated by blank lines; auto: detect per file")
    p.add_argument("--max_seq_length", type=int, default=512)
    p.add_argument("--max_predictions_per_seq", type=int, default=20)
    p.add_argument("--masked_lm_prob", type=float, default=0.15)
    p.add_argument("--ngram", type=int, default=3)
    p.add_argument("--short_seq_prob", type=float, default=0.1)
    p.add_argument("--dupe_factor", type=int, default=1,
                   help="passes over the data, each with different masks")
    p.add_argument("--num_shards", type=int, default=8)
    p.add_argument("--validation_fraction", type=float, default=0.0,
                   help="fraction of documents written to validation/ instead of train/")
    p.add_argument("--processes", type=int, default=os.cpu_count() or 1)
    p.add_argument("--docs_per_chunk", type=int, default=64,
                   help="documents per unit of parallel work (part of what the seed determines)")
    p.add_argument("--seed", type=int, default=12345)
    p.add_argument("--gzip", action="store_true", help="write GZIP-compressed TFRecords")
    p.add_argument("--no_progress", action="store_true")
    return p.parse_args(argv)


# -- worker side ------------------------------------------------------------------------------

_maker: InstanceMaker | None = None


def _init_worker(spm_model: str, options: InstanceOptions):
    global _maker
    _maker = InstanceMaker(spm_model, options)


@dataclasses.dataclass
class ChunkResult:
    train: list[bytes]
    validation: list[bytes]
    tokens: int = 0
    masked: int = 0
    swapped: int = 0
    short_documents: int = 0


def process_chunk(chunk_index: int, first_doc: int, docs: list[list[str]], dupe_factor: int,
                  seed: int, validation_fraction: float) -> ChunkResult:
    maker = _maker
    result = ChunkResult([], [])
    tokenized = [maker.tokenize_document(d) for d in docs]
    is_val = [
        validation_fraction > 0
        and random.Random(f"{seed}:val:{first_doc + i}").random() < validation_fraction
        for i in range(len(docs))
    ]
    for dupe in range(dupe_factor):
        rng = random.Random(f"{seed}:{chunk_index}:{dupe}")
        train, val = [], []
        for doc, to_val in zip(tokenized, is_val, strict=True):
            instances = maker.instances_from_document(doc, rng)
            if dupe == 0 and not instances:
                result.short_documents += 1
            for inst in instances:
                result.tokens += len(inst.input_ids)
                result.masked += len(inst.masked_lm_positions)
                result.swapped += inst.is_swapped
                (val if to_val else train).append(maker.serialize(inst))
        rng.shuffle(train)
        result.train += train
        result.validation += val
    return result


# -- driver side ------------------------------------------------------------------------------


def _chunks(docs: Iterator[list[str]], size: int):
    chunk, first, index = [], 0, 0
    for n, doc in enumerate(docs):
        if not chunk:
            first = n
        chunk.append(doc)
        if len(chunk) == size:
            yield index, first, chunk
            index, chunk = index + 1, []
    if chunk:
        yield index, first, chunk


class ShardWriter:
    """Deals records round-robin over N shards written under temporary names."""

    def __init__(self, directory: str, num_shards: int, gzip: bool):
        os.makedirs(directory, exist_ok=True)
        ext = ".tfrecord.gz" if gzip else ".tfrecord"
        self.final = [os.path.join(directory, f"part-{i:05d}-of-{num_shards:05d}{ext}")
                      for i in range(num_shards)]
        self.tmp = [os.path.join(directory, f".{os.path.basename(f)}.tmp") for f in self.final]
        self.writers = [TFRecordWriter(t, gzip) for t in self.tmp]
        self.count = 0
        self.per_shard = [0] * num_shards

    def write(self, record: bytes):
        i = self.count % len(self.writers)
        self.writers[i].write(record)
        self.per_shard[i] += 1
        self.count += 1

    def close(self, commit: bool):
        for w in self.writers:
            w.close()
        for tmp, final in zip(self.tmp, self.final, strict=True):
            if commit:
                os.replace(tmp, final)
            elif os.path.exists(tmp):
                os.remove(tmp)


def _check_args(args):
    if args.num_shards < 1:
        raise ValueError(f"--num_shards must be at least 1, got {args.num_shards}")
    if args.dupe_factor < 1:
        raise ValueError(f"--dupe_factor must be at least 1, got {args.dupe_factor}")
    if args.processes < 1:
        raise ValueError(f"--processes must be at least 1, got {args.processes}")
    if not 0 <= args.validation_fraction < 1:
        raise ValueError(f"--validation_fraction must be in [0, 1), got {args.validation_fraction}")
    if args.docs_per_chunk < 1:
        raise ValueError("--docs_per_chunk must be at least 1")
    try:
        os.makedirs(args.output_dir, exist_ok=True)
    except OSError as e:
        raise OSError(f"cannot create --output_dir {args.output_dir}: {e.strerror}") from None
    if not os.access(args.output_dir, os.W_OK):
        raise PermissionError(f"--output_dir {args.output_dir} is not writable")


def run(args) -> dict:
    _check_args(args)
    options = InstanceOptions(args.max_seq_length, args.max_predictions_per_seq,
                              args.masked_lm_prob, args.ngram, args.short_seq_prob)
    files = expand_inputs(args.input)
    InstanceMaker(args.spm_model, options)  # fail fast on a bad model or options
    stats = ReadStats()
    start = time.time()
    train_writer = ShardWriter(os.path.join(args.output_dir, "train"), args.num_shards, args.gzip)
    val_writer = None
    if args.validation_fraction > 0:
        val_writer = ShardWriter(os.path.join(args.output_dir, "validation"),
                                 max(1, args.num_shards // 8), args.gzip)
    totals = dict(tokens=0, masked=0, swapped=0, short_documents=0)
    progress = None
    if not args.no_progress:
        from tqdm import tqdm

        progress = tqdm(unit=" inst", desc="instances", mininterval=1.0, file=sys.stderr)

    def consume(result: ChunkResult):
        for record in result.train:
            train_writer.write(record)
        for record in result.validation:
            val_writer.write(record)
        for key in totals:
            totals[key] += getattr(result, key)
        if progress is not None:
            progress.update(len(result.train) + len(result.validation))

    chunks = _chunks(iter_documents(files, args.input_format, stats), args.docs_per_chunk)
    task = (args.dupe_factor, args.seed, args.validation_fraction)
    ok = False
    try:
        if args.processes == 1:
            _init_worker(args.spm_model, options)
            for index, first, docs in chunks:
                consume(process_chunk(index, first, docs, *task))
        else:
            # spawn, not fork: safe even when the caller (a test, a notebook) has TensorFlow loaded.
            ctx = multiprocessing.get_context("spawn")
            with cf.ProcessPoolExecutor(args.processes, mp_context=ctx, initializer=_init_worker,
                                        initargs=(args.spm_model, options)) as pool:
                pending = []
                for index, first, docs in chunks:
                    pending.append(pool.submit(process_chunk, index, first, docs, *task))
                    while len(pending) >= 2 * args.processes:
                        consume(pending.pop(0).result())
                for future in pending:
                    consume(future.result())
        if train_writer.count + (val_writer.count if val_writer else 0) == 0:
            raise ValueError(
                f"no instances: the input has {stats.documents} documents and none was long "
                f"enough for a sentence pair (files: {', '.join(files)})"
            )
        ok = True
    finally:
        if progress is not None:
            progress.close()
        train_writer.close(commit=ok)
        if val_writer is not None:
            val_writer.close(commit=ok)
    elapsed = time.time() - start
    instances = train_writer.count + (val_writer.count if val_writer else 0)
    summary = {
        "instances": instances,
        "train_instances": train_writer.count,
        "validation_instances": val_writer.count if val_writer else 0,
        "tokens": totals["tokens"],
        "masked_tokens": totals["masked"],
        "swapped_fraction": totals["swapped"] / instances,
        "documents": stats.documents,
        "short_documents_skipped": totals["short_documents"],
        "invalid_utf8_lines_skipped": stats.bad_lines,
        "input_files": files,
        "seconds": round(elapsed, 3),
        "instances_per_second": round(instances / max(elapsed, 1e-9), 1),
        "train_files": train_writer.final,
        "validation_files": val_writer.final if val_writer else [],
        "records_per_train_file": train_writer.per_shard,
        "settings": {k: v for k, v in vars(args).items() if k not in ("input", "no_progress")},
    }
    tmp = os.path.join(args.output_dir, ".summary.json.tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(summary, f, indent=2)
        f.write("\n")
    os.replace(tmp, os.path.join(args.output_dir, "summary.json"))
    if 0 in train_writer.per_shard:
        logger.warning("%d of %d train shards are empty: use fewer --num_shards for this corpus",
                       train_writer.per_shard.count(0), args.num_shards)
    return summary


def main(argv=None):
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    args = parse_args(argv)
    try:
        summary = run(args)
    except (ValueError, FileNotFoundError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(
        f"wrote {summary['instances']} instances ({summary['instances_per_second']:.0f}/s, "
        f"{summary['masked_tokens']} masked tokens) to {args.output_dir}; "
        f"skipped {summary['short_documents_skipped']} short documents and "
        f"{summary['invalid_utf8_lines_skipped']} invalid UTF-8 lines"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
