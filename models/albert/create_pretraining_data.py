"""Corpus -> ALBERT pretraining TFRecords (sentence-order prediction + n-gram masking), shuffled.

    python -m albert.create_pretraining_data --input 'corpus/*.txt' \\
        --spm_model vocab/spiece.model --output_dir data/ --max_seq_length 128 \\
        --max_predictions_per_seq 20 --processes 2
    python -m albert.create_pretraining_data --input enwiki-latest-pages-articles.xml.bz2 \\
        --input_format wikipedia --spm_model vocab/spiece.model --output_dir /fsx/albert_data ...

Output: `<output_dir>/train/part-00000-of-000NN.tfrecord` (and `validation/` with
--validation_fraction), google-research BERT/ALBERT feature format, plus `summary.json`.

How it works, and why it scales:
- Reader processes stream documents from the input files (several files at once) in chunks of
  --docs_per_chunk documents; --processes worker processes turn chunks into serialized records.
  Chunk c of file f, duplicate d, uses a random generator seeded by (seed, f, c, d) alone.
- The shuffle: every record gets a random 64-bit key from that generator. The key's range picks
  its shard (so every shard is a random sample of the whole corpus, duplicates included), and each
  shard is written in key order (so its order is a uniform random permutation). Records are first
  appended to one temporary bucket file per shard, in whatever order they arrive; a bucket is then
  sorted by key in memory if it fits in --shuffle_buffer_mb, or first split by key range into
  smaller buckets. Sorting by keys that only depend on the seed makes the output byte-identical
  for any --processes or --shuffle_buffer_mb, and memory does not grow with the corpus.
- Atomic: everything is written into a temporary sibling directory, which replaces --output_dir
  only when the run has succeeded (an existing non-empty directory needs --overwrite). A failed or
  killed run leaves --output_dir as it was; the next run removes the leftovers.
"""

from __future__ import annotations

import argparse
import ctypes
import dataclasses
import errno
import json
import logging
import multiprocessing
import os
import queue
import random
import resource
import shutil
import signal
import socket
import struct
import sys
import threading
import time
import traceback
from collections import Counter

from albert.data.corpus import (
    FORMATS,
    InputSkips,
    ReadStats,
    check_input,
    chunked,
    die_with_parent,
    expand_inputs,
    finish_document,
    read_documents,
)
from albert.data.pretraining import InstanceMaker, InstanceOptions
from albert.data.tfrecord import frame, framed_length, open_output
from albert.tokenization import vocab_checksum

logger = logging.getLogger("albert.create_pretraining_data")

SPLITS = ("train", "validation")
# A bucket entry is a 20-byte key, then one framed TFRecord. Key: 8 random bytes (the shuffle),
# then file, chunk and record numbers, which make every key unique, so the sort never ties.
_KEY = struct.Struct(">QIII")
_MAX_PARTS = 256  # files open at once when a bucket is split by key range
_WRITE_BATCH = 1 << 20


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--input", nargs="+", required=True,
                   help="files, directories, globs or comma lists; .gz/.bz2/.xz are decompressed")
    p.add_argument("--spm_model", required=True, help="SentencePiece model (spiece.model)")
    p.add_argument("--output_dir", required=True)
    p.add_argument("--overwrite", action="store_true",
                   help="replace a non-empty --output_dir (only once the new data is complete)")
    p.add_argument("--input_format", choices=FORMATS, default="auto",
                   help="auto: by file name (.jsonl/.json, .parquet, .xml = wikipedia, else text); "
                        "text: one document per line (line) or one sentence per line with blank "
                        "lines between documents (blank), detected per file")
    p.add_argument("--text_field", default="text", help="the text field of jsonl/parquet input")
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
    p.add_argument("--processes", type=int, default=os.cpu_count() or 1,
                   help="worker processes making records (1: everything in this process)")
    p.add_argument("--readers", type=int, default=0,
                   help="processes reading input files at once (0: processes/4, at least 1)")
    p.add_argument("--docs_per_chunk", type=int, default=64,
                   help="documents per unit of parallel work (part of what the seed determines)")
    p.add_argument("--shuffle_buffer_mb", type=float, default=8,
                   help="memory per process for sorting one shard; larger shards are split first")
    p.add_argument("--seed", type=int, default=12345)
    p.add_argument("--gzip", action="store_true", help="write GZIP-compressed TFRecords")
    p.add_argument("--no_progress", action="store_true")
    return p.parse_args(argv)


@dataclasses.dataclass(frozen=True)
class Plan:
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


# -- records from a chunk of documents (worker side) --------------------------------------------


@dataclasses.dataclass
class ChunkOutput:
    buckets: dict  # (split, shard) -> (records, bytes of key + framed record entries)
    stats: ReadStats
    tokens: int = 0
    masked: int = 0
    swapped: int = 0
    short_documents: int = 0


def make_chunk(maker: InstanceMaker, plan: Plan, file_index: int, chunk_index: int,
               first_doc: int, raw_docs: list) -> ChunkOutput:
    """Raw documents -> keyed, framed records grouped by the shard their key falls in."""
    out = ChunkOutput({}, ReadStats())
    docs = []
    for i, raw in enumerate(raw_docs):
        sentences = finish_document(raw, out.stats)
        if sentences:
            doc_id = f"{plan.seed}:val:{file_index}:{first_doc + i}"
            to_val = (plan.validation_fraction > 0
                      and random.Random(doc_id).random() < plan.validation_fraction)
            docs.append((maker.tokenize_document(sentences), to_val))
    groups: dict = {}
    serial = 0
    for dupe in range(plan.dupe_factor):
        rng = random.Random(f"{plan.seed}:{file_index}:{chunk_index}:{dupe}")
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
                shard = (draw * plan.shards[split]) >> 64
                entry = _KEY.pack(draw, file_index, chunk_index, serial)
                groups.setdefault((split, shard), []).append(entry + frame(maker.serialize(inst)))
                serial += 1
    out.buckets = {key: (len(entries), b"".join(entries)) for key, entries in groups.items()}
    return out


# -- buckets and the sort (driver and worker side) ----------------------------------------------


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
            start = offset + _KEY.size
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
            while head := f.read(_KEY.size + 8):
                entry = head + f.read(framed_length(head, _KEY.size) - 8)
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


# -- worker processes -----------------------------------------------------------------------------


def _describe(e: BaseException) -> tuple[str, str]:
    """An exception -> (kind, one-line message); unexpected ones keep their traceback."""
    if isinstance(e, OSError) and e.errno == errno.ENOSPC:
        return "input", _no_space_message(e)
    if isinstance(e, ValueError | OSError):
        return "input", str(e)
    return "bug", traceback.format_exc()


def _no_space_message(e: OSError) -> str:
    where = f" writing {e.filename}" if e.filename else ""
    return (f"no space left on device{where}: free some space or choose another --output_dir "
            "(the output needs about twice its final size while it is being shuffled)")


def _reader_main(parent: int, plan: Plan, file_q, task_q, result_q) -> None:
    die_with_parent(parent)
    try:
        while (item := file_q.get()) is not None:
            index, path = item
            stats = ReadStats()
            docs = read_documents(path, plan.input_format, plan.text_field, stats)
            chunks = 0
            for chunk_index, first, raw in chunked(docs, plan.docs_per_chunk):
                task_q.put(("chunk", index, chunk_index, first, raw))
                chunks += 1
            result_q.put(("file", index, path, chunks, stats))
    except Exception as e:
        result_q.put(("error", *_describe(e)))


def _maker_main(parent: int, plan: Plan, task_q, result_q) -> None:
    die_with_parent(parent)
    try:
        maker = InstanceMaker(plan.spm_model, plan.options)
        while (task := task_q.get()) is not None:
            if task[0] == "chunk":
                result_q.put(("chunk", make_chunk(maker, plan, *task[1:])))
            else:
                _, key, *shard_args = task
                result_q.put(("shard", key, write_shard(*shard_args)))
    except Exception as e:
        result_q.put(("error", *_describe(e)))


class WorkerError(ValueError):
    """A worker process reported bad input or a full disk (the message says which)."""


class _Processes:
    """Reader and maker processes, their queues, and the driver's side of the conversation."""

    def __init__(self, plan: Plan, files: list[str], makers: int, readers: int):
        # spawn, not fork: safe even when the caller (a test, a notebook) has TensorFlow loaded.
        ctx = multiprocessing.get_context("spawn")
        self.file_q = ctx.Queue()
        # Bounded: readers wait while the makers are busy, so raw text never piles up in memory.
        self.task_q = ctx.Queue(maxsize=2 * makers)
        self.result_q = ctx.Queue()
        for item in enumerate(files):
            self.file_q.put(item)
        for _ in range(readers):
            self.file_q.put(None)
        me = os.getpid()
        self.procs = [ctx.Process(target=_reader_main, daemon=True,
                                  args=(me, plan, self.file_q, self.task_q, self.result_q))
                      for _ in range(readers)]
        self.procs += [ctx.Process(target=_maker_main, daemon=True,
                                   args=(me, plan, self.task_q, self.result_q))
                       for _ in range(makers)]
        self.makers = makers
        for p in self.procs:
            p.start()

    def get(self):
        while True:
            try:
                message = self.result_q.get(timeout=1.0)
            except queue.Empty:
                for p in self.procs:
                    if p.exitcode not in (None, 0):
                        how = (f"was killed by signal {-p.exitcode} (out of memory?)"
                               if p.exitcode < 0 else f"exited with status {p.exitcode}")
                        raise RuntimeError(f"a worker process (pid {p.pid}) {how}") from None
                continue
            if message[0] == "error":
                _, kind, text = message
                raise WorkerError(text) if kind == "input" else RuntimeError(text)
            return message

    def finish(self) -> None:
        for _ in range(self.makers):
            self.task_q.put(None)
        for p in self.procs:
            p.join()

    def stop(self) -> None:
        for p in self.procs:
            if p.is_alive():
                p.kill()
        for p in self.procs:
            p.join()
        for q in (self.file_q, self.task_q, self.result_q):
            q.cancel_join_thread()


# -- the run --------------------------------------------------------------------------------------


@dataclasses.dataclass
class Totals:
    stats: ReadStats = dataclasses.field(default_factory=ReadStats)
    tokens: int = 0
    masked: int = 0
    swapped: int = 0
    short_documents: int = 0
    chunks: int = 0
    warnings: list = dataclasses.field(default_factory=list)
    inputs: InputSkips = dataclasses.field(default_factory=InputSkips)

    def add(self, out: ChunkOutput) -> None:
        self.stats.add(out.stats)
        self.tokens += out.tokens
        self.masked += out.masked
        self.swapped += out.swapped
        self.short_documents += out.short_documents
        self.chunks += 1

    def add_file(self, path: str, stats: ReadStats) -> None:
        self.stats.add(stats)
        if stats.lines and stats.bad_lines == stats.lines:
            self.warn(f"input {path}: every one of its {stats.lines} lines was skipped as invalid "
                      "UTF-8 (is it in another encoding? convert it, e.g. iconv -t utf-8)")

    def warn(self, message: str) -> None:
        logger.warning("warning: %s", message)
        self.warnings.append(message)


def _generate(plan: Plan, files: list[str], work: str, args, totals: Totals) -> dict:
    """Records into buckets, then buckets into shuffled shards. Returns {split: [records]}."""
    buckets = Buckets(os.path.join(work, ".buckets"))
    os.makedirs(buckets.directory)
    progress = None
    if not args.no_progress:
        from tqdm import tqdm

        progress = tqdm(unit=" inst", desc="instances", mininterval=1.0, file=sys.stderr)

    def consume(out: ChunkOutput):
        buckets.add(out.buckets)
        totals.add(out)
        if progress is not None:
            progress.update(sum(count for count, _ in out.buckets.values()))

    budget = int(args.shuffle_buffer_mb * 2**20)
    try:
        if args.processes == 1:
            maker = InstanceMaker(plan.spm_model, plan.options)
            for index, path in enumerate(files):
                stats = ReadStats()
                docs = read_documents(path, plan.input_format, plan.text_field, stats)
                for chunk_index, first, raw in chunked(docs, plan.docs_per_chunk):
                    consume(make_chunk(maker, plan, index, chunk_index, first, raw))
                totals.add_file(path, stats)
            buckets.close()
            tasks = _shard_tasks(plan, buckets, work, args.gzip, budget, totals)
            return _collect({key: write_shard(*task) for key, task in tasks.items()})
        readers = args.readers or min(len(files), max(1, args.processes // 4))
        procs = _Processes(plan, files, args.processes, readers)
        try:
            files_done = chunks_expected = 0
            while files_done < len(files) or totals.chunks < chunks_expected:
                message = procs.get()
                if message[0] == "chunk":
                    consume(message[1])
                else:
                    _, _, path, chunks, stats = message
                    files_done += 1
                    chunks_expected += chunks
                    totals.add_file(path, stats)
            buckets.close()
            tasks = _shard_tasks(plan, buckets, work, args.gzip, budget, totals)
            for key, task in tasks.items():
                procs.task_q.put(("shard", key, *task))
            written = {}
            while len(written) < len(tasks):
                _, key, count = procs.get()
                written[key] = count
            procs.finish()
        finally:
            procs.stop()
        return _collect(written)
    finally:
        buckets.close()
        if progress is not None:
            progress.close()


def _shard_tasks(plan: Plan, buckets: Buckets, work: str, gzip: bool, budget: int,
                 totals: Totals) -> dict:
    """(split, output index) -> write_shard arguments, for the non-empty buckets only.

    An empty shard would leave the rank that reads it without data (horovodrun then hangs), so
    shards are numbered over the non-empty buckets, and a warning says when that is fewer.
    """
    per_split = [sum(c for (split, _), c in buckets.counts.items() if split == s) for s in (0, 1)]
    if per_split == [0, 0]:
        raise ValueError(_no_instances_message(totals))
    if per_split[0] == 0:
        raise ValueError(f"no train instances: all {per_split[1]} went to the validation set; "
                         "use a smaller --validation_fraction")
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
                                 *shard_key_range(key[1], plan.shards[split]))
        if len(keys) < plan.shards[split]:
            records = sum(buckets.counts[k] for k in keys)
            flag = "--num_shards" if split == 0 else "--num_shards / 8 (validation)"
            totals.warn(f"{name}: wrote {len(keys)} shards instead of {plan.shards[split]} "
                        f"({flag}): {records} records leave the others empty, and an empty shard "
                        "stalls the rank that reads it")
    return tasks


def _collect(written: dict) -> dict:
    out = {name: [] for name in SPLITS}
    for split, j in sorted(written):
        out[SPLITS[split]].append(written[(split, j)])
    return out


def _no_instances_message(totals: Totals) -> str:
    s = totals.stats
    if s.lines and s.bad_lines == s.lines:
        return (f"no instances: every line of the input ({s.lines} lines) was skipped as invalid "
                "UTF-8; convert the files to UTF-8 (e.g. iconv -f latin1 -t utf-8)")
    skipped = {k: v for k, v in _skipped(totals).items() if v}
    detail = f" (skipped: {', '.join(f'{v} {k}' for k, v in skipped.items())})" if skipped else ""
    if s.documents == 0:
        return f"no instances: the input has 0 documents{detail}"
    return (f"no instances: the input has {s.documents} documents and none was long enough for "
            f"a sentence pair{detail}")


def _skipped(totals: Totals) -> dict:
    s = totals.stats
    return {
        "invalid_utf8_lines": s.bad_lines,
        "invalid_json_lines": s.bad_json_lines,
        "null_texts": s.null_texts,
        "redirects": s.redirects,
        "non_article_pages": s.non_article_pages,
        "disambiguation_pages": s.disambiguation_pages,
        "empty_documents": s.empty_documents,
        "sentences_with_holes": s.sentences_with_holes,
        "sentences_with_markup": s.sentences_with_markup,
        "short_documents": totals.short_documents,
        **totals.inputs.as_dict(),
    }


# -- the output directory -------------------------------------------------------------------------


def _temporary_name(out: str, kind: str) -> str:
    """A hidden sibling of --output_dir, named after this host and process."""
    parent, base = os.path.split(out)
    return os.path.join(parent, f".{base}.{kind}-{socket.gethostname()}-{os.getpid()}")


def _check_output_dir(out: str, overwrite: bool, inputs: list[str]) -> None:
    for path in inputs:
        if os.path.commonpath([out, os.path.abspath(path)]) == out:
            raise ValueError(f"--output_dir {out} holds the input {path}, which replacing the "
                             "directory would delete; choose another --output_dir")
    if os.path.lexists(out) and not os.path.isdir(out):
        raise ValueError(f"--output_dir {out} exists and is not a directory")
    if os.path.isdir(out):
        if os.path.ismount(out):
            raise ValueError(f"--output_dir {out} is a mount point, which cannot be replaced "
                             "atomically; write into a directory below it")
        entries = sorted(os.listdir(out))
        if entries and not overwrite:
            shown = ", ".join(entries[:4]) + (", ..." if len(entries) > 4 else "")
            raise ValueError(f"--output_dir {out} is not empty ({shown}); pass --overwrite to "
                             "replace it once the new data is complete, or choose another "
                             "directory")


def _remove_stale_temporaries(out: str) -> None:
    """Remove what killed runs on this host left beside --output_dir (their pid is gone)."""
    parent, base = os.path.split(out)
    if not os.path.isdir(parent):
        return
    host = socket.gethostname()
    for name in os.listdir(parent):
        for kind in ("partial", "old"):
            prefix = f".{base}.{kind}-{host}-"
            if name.startswith(prefix) and name[len(prefix):].isdigit():
                pid = int(name[len(prefix):])
                if pid != os.getpid() and not _alive(pid):
                    shutil.rmtree(os.path.join(parent, name), ignore_errors=True)
                    logger.info("removed %s, left by an interrupted run",
                                os.path.join(parent, name))


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _make_work_dir(out: str) -> str:
    work = _temporary_name(out, "partial")
    try:
        os.makedirs(os.path.dirname(out), exist_ok=True)
        os.mkdir(work)
    except OSError as e:
        raise OSError(f"cannot create --output_dir {out}: {e.strerror}") from None
    return work


def _exchange(a: str, b: str) -> bool:
    """Atomically swap two directories (Linux renameat2 RENAME_EXCHANGE); False if unsupported."""
    try:
        renameat2 = ctypes.CDLL(None, use_errno=True).renameat2
    except (OSError, AttributeError):
        return False
    at_fdcwd, rename_exchange = -100, 2
    if renameat2(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), rename_exchange) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.EINVAL, errno.ENOSYS, errno.ENOTSUP, errno.EPERM):
        return False
    raise OSError(err, os.strerror(err), b)


def _commit(work: str, out: str) -> None:
    """Put the finished work directory at `out`, replacing what was there."""
    if not os.path.isdir(out):
        os.rename(work, out)
        return
    if _exchange(work, out):
        shutil.rmtree(work)
        return
    # No atomic exchange on this file system: two renames. A crash between them leaves the new
    # data complete in the .partial directory and the old in the .old one.
    old = _temporary_name(out, "old")
    os.rename(out, old)
    os.rename(work, out)
    shutil.rmtree(old)


# -- the command ----------------------------------------------------------------------------------


def _check_args(args) -> None:
    if args.num_shards < 1:
        raise ValueError(f"--num_shards must be at least 1, got {args.num_shards}")
    if args.dupe_factor < 1:
        raise ValueError(f"--dupe_factor must be at least 1, got {args.dupe_factor}")
    if args.processes < 1:
        raise ValueError(f"--processes must be at least 1, got {args.processes}")
    if args.readers < 0:
        raise ValueError(f"--readers must be 0 (automatic) or more, got {args.readers}")
    if not 0 <= args.validation_fraction < 1:
        raise ValueError(f"--validation_fraction must be in [0, 1), got {args.validation_fraction}")
    if args.docs_per_chunk < 1:
        raise ValueError(f"--docs_per_chunk must be at least 1, got {args.docs_per_chunk}")
    if not args.shuffle_buffer_mb > 0:
        raise ValueError(f"--shuffle_buffer_mb must be positive, got {args.shuffle_buffer_mb}")
    if not args.text_field:
        raise ValueError("--text_field must not be empty")


def _allow_open_files(needed: int) -> None:
    """One bucket file per shard stays open while records arrive."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft >= needed:
        return
    if hard != resource.RLIM_INFINITY and hard < needed:
        raise ValueError(f"--num_shards needs {needed} open files, but this system allows "
                         f"{hard} (ulimit -n); use fewer shards")
    resource.setrlimit(resource.RLIMIT_NOFILE, (needed, hard))


def run(args) -> dict:
    _check_args(args)
    options = InstanceOptions(args.max_seq_length, args.max_predictions_per_seq,
                              args.masked_lm_prob, args.ngram, args.short_seq_prob)
    totals = Totals()
    files = expand_inputs(args.input, totals.inputs)
    if totals.inputs.describe():
        totals.warn(totals.inputs.describe())
    for path in files:
        check_input(path, args.input_format, args.text_field)
    vocab_size = InstanceMaker(args.spm_model, options).vocab_size  # fail fast: model, options
    # Which vocabulary the ids are of, for the summary: run_pretraining compares it.
    vocabulary = {"spm_model": os.path.abspath(args.spm_model),
                  "sha256": vocab_checksum(args.spm_model), "vocab_size": vocab_size}
    out = os.path.abspath(args.output_dir)
    _check_output_dir(out, args.overwrite, [*files, args.spm_model])
    val_shards = max(1, args.num_shards // 8) if args.validation_fraction > 0 else 1
    _allow_open_files(args.num_shards + val_shards + 64)
    plan = Plan(os.path.abspath(args.spm_model), options, args.input_format, args.text_field,
                args.docs_per_chunk, args.dupe_factor, args.seed, args.validation_fraction,
                (args.num_shards, val_shards))
    _remove_stale_temporaries(out)
    start = time.time()
    work = _make_work_dir(out)
    committed = False
    try:
        records = _generate(plan, files, work, args, totals)
        shutil.rmtree(os.path.join(work, ".buckets"))
        train, val = sum(records["train"]), sum(records["validation"])
        if args.validation_fraction > 0 and val == 0:
            totals.warn(f"--validation_fraction {args.validation_fraction} put none of the "
                        f"{totals.stats.documents} documents in the validation set: no "
                        "validation/ written; use a larger fraction to validate")
        elapsed = time.time() - start
        summary = {**_summary(args, files, out, totals, records, elapsed),
                   "vocabulary": vocabulary}
        with open(os.path.join(work, "summary.json"), "w", encoding="utf-8") as f:
            json.dump(summary, f, indent=2)
            f.write("\n")
        _commit(work, out)
        committed = True
    except OSError as e:
        if e.errno == errno.ENOSPC:
            raise OSError(_no_space_message(e)) from None
        raise
    finally:
        if not committed:
            shutil.rmtree(work, ignore_errors=True)
    logger.info("%d train and %d validation instances in %.1fs", train, val, elapsed)
    return summary


def _summary(args, files, out, totals: Totals, records: dict, elapsed: float) -> dict:
    train, val = sum(records["train"]), sum(records["validation"])
    instances = train + val
    ext = ".tfrecord.gz" if args.gzip else ".tfrecord"

    def names(split):
        n = len(records[split])
        return [os.path.join(out, split, f"part-{j:05d}-of-{n:05d}{ext}") for j in range(n)]

    s = totals.stats
    return {
        "instances": instances,
        "train_instances": train,
        "validation_instances": val,
        "tokens": totals.tokens,
        "masked_tokens": totals.masked,
        "swapped_fraction": totals.swapped / instances,
        "documents": s.documents,
        "short_documents_skipped": totals.short_documents,
        "invalid_utf8_lines_skipped": s.bad_lines,
        "skipped": _skipped(totals),
        "read": {"files": s.files, "lines": s.lines, "pages": s.pages},
        "input_files": files,
        "seconds": round(elapsed, 3),
        "instances_per_second": round(instances / max(elapsed, 1e-9), 1),
        "train_files": names("train"),
        "validation_files": names("validation"),
        "records_per_train_file": records["train"],
        "records_per_validation_file": records["validation"],
        "shuffle": "global: every record in a random shard, every shard in random order",
        "warnings": totals.warnings,
        "settings": {k: v for k, v in vars(args).items() if k not in ("input", "no_progress")},
    }


def _exit_on_sigterm(signum, frame):
    # Unwinds through run()'s cleanup: workers stopped, temporary directory removed.
    raise SystemExit(128 + signum)


def main(argv=None):
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    args = parse_args(argv)
    in_main_thread = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, _exit_on_sigterm) if in_main_thread else None
    try:
        summary = run(args)
    except (ValueError, FileNotFoundError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except RuntimeError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    finally:
        if in_main_thread:
            signal.signal(signal.SIGTERM, previous)
    skipped = ", ".join(f"{v} {k.replace('_', ' ')}" for k, v in summary["skipped"].items() if v)
    print(
        f"wrote {summary['instances']} instances ({summary['instances_per_second']:.0f}/s, "
        f"{summary['masked_tokens']} masked tokens) from {summary['documents']} documents to "
        f"{args.output_dir}; skipped {skipped or 'nothing'}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
