"""create_pretraining_data's work: records into buckets, then buckets into shuffled shards, in this
process or in worker processes.

Reader processes stream documents from the input files (several files at once) in chunks of
--docs_per_chunk documents; --processes maker processes turn chunks into keyed records
(albert.data.chunks), which this process appends to the buckets, and then write the buckets as
shards (albert.data.shuffle). Workers die with this process, even by kill -9.
"""

from __future__ import annotations

import errno
import multiprocessing
import os
import queue
import time
import traceback

from albert.data.chunks import ChunkOutput, GeneratorSettings, make_chunk
from albert.data.corpus import ReadStats, chunked, die_with_parent, read_documents
from albert.data.output_dir import no_space_message
from albert.data.pretraining import InstanceMaker
from albert.data.progress import InputProgress, ReadPosition
from albert.data.report import Totals
from albert.data.shuffle import Buckets, write_shard, write_shards
from albert.errors import AlbertError

_POSITION_SECONDS = 1.0  # how often a reader says how far it has read


def generate(settings: GeneratorSettings, files: list[str], work: str, processes: int,
             readers: int, gzip: bool, budget: int, totals: Totals,
             progress: InputProgress) -> dict:
    """Records into buckets under `work`/.buckets, then buckets into shuffled shards. `readers`
    0: processes/4, at least 1. Returns {split: [records per shard]}."""
    buckets = Buckets(os.path.join(work, ".buckets"))
    os.makedirs(buckets.directory)
    instances = 0

    def consume(out: ChunkOutput):
        nonlocal instances
        buckets.add(out.buckets)
        totals.add(out)
        instances += sum(count for count, _ in out.buckets.values())
        progress.counted(instances)

    try:
        if processes == 1:
            maker = InstanceMaker(settings.spm_model, settings.options)
            for index, path in enumerate(files):
                stats = ReadStats()
                position = progress.position(path)
                docs = read_documents(path, settings.input_format, settings.text_field, stats)
                for chunk_index, first, raw in chunked(docs, settings.docs_per_chunk):
                    progress.read(index, position())
                    consume(make_chunk(maker, settings, index, chunk_index, first, raw))
                totals.add_file(path, stats)
                progress.done(index)
            return write_shards(settings, buckets, work, gzip, budget, totals)
        readers = readers or min(len(files), max(1, processes // 4))
        procs = Processes(settings, files, processes, readers, progress.enabled)
        try:
            files_done = chunks_expected = 0
            while files_done < len(files) or totals.chunks < chunks_expected:
                message = procs.get()
                if message[0] == "chunk":
                    consume(message[1])
                elif message[0] == "read":
                    progress.read(*message[1:])
                else:
                    _, index, path, chunks, stats = message
                    files_done += 1
                    chunks_expected += chunks
                    totals.add_file(path, stats)
                    progress.done(index)
            records = write_shards(settings, buckets, work, gzip, budget, totals, procs.write)
            procs.finish()
        finally:
            procs.stop()
        return records
    finally:
        buckets.close()


def _describe(e: BaseException) -> tuple[str, str]:
    """An exception -> (kind, one-line message): a user's error (the AlbertError family, a file
    that cannot be read or written), or a bug, a plain ValueError too, that keeps its
    traceback."""
    if isinstance(e, OSError) and e.errno == errno.ENOSPC:
        return "input", no_space_message(e)
    if isinstance(e, AlbertError | OSError):
        return "input", str(e)
    return "bug", traceback.format_exc()


def _reader_main(parent: int, settings: GeneratorSettings, file_q, task_q, result_q,
                 positions: bool) -> None:
    die_with_parent(parent)
    try:
        while (item := file_q.get()) is not None:
            index, path = item
            stats = ReadStats()
            position = ReadPosition(path) if positions else None
            said = time.monotonic()
            docs = read_documents(path, settings.input_format, settings.text_field, stats)
            chunks = 0
            for chunk_index, first, raw in chunked(docs, settings.docs_per_chunk):
                task_q.put(("chunk", index, chunk_index, first, raw))
                chunks += 1
                if position is not None and time.monotonic() - said >= _POSITION_SECONDS:
                    said = time.monotonic()
                    result_q.put(("read", index, position()))
            result_q.put(("file", index, path, chunks, stats))
    except Exception as e:
        result_q.put(("error", *_describe(e)))


def _maker_main(parent: int, settings: GeneratorSettings, task_q, result_q) -> None:
    die_with_parent(parent)
    try:
        maker = InstanceMaker(settings.spm_model, settings.options)
        while (task := task_q.get()) is not None:
            if task[0] == "chunk":
                result_q.put(("chunk", make_chunk(maker, settings, *task[1:])))
            else:
                _, key, *shard_args = task
                result_q.put(("shard", key, write_shard(*shard_args)))
    except Exception as e:
        result_q.put(("error", *_describe(e)))


class WorkerError(AlbertError, ValueError):
    """A worker process reported bad input or a full disk (the message says which)."""


class Processes:
    """Reader and maker processes, their queues, and the driver's side of the conversation."""

    def __init__(self, settings: GeneratorSettings, files: list[str], makers: int, readers: int,
                 positions: bool = False):
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
                                  args=(me, settings, self.file_q, self.task_q, self.result_q,
                                        positions))
                      for _ in range(readers)]
        self.procs += [ctx.Process(target=_maker_main, daemon=True,
                                   args=(me, settings, self.task_q, self.result_q))
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

    def write(self, tasks: dict) -> dict:
        """write_shard tasks run by the makers: {key: arguments} -> {key: records}."""
        for key, task in tasks.items():
            self.task_q.put(("shard", key, *task))
        written = {}
        while len(written) < len(tasks):
            message = self.get()
            if message[0] == "shard":
                _, key, count = message
                written[key] = count
        return written

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
