"""Corpus -> ALBERT pretraining TFRecords (sentence-order prediction + n-gram masking), shuffled.

    python -m albert.create_pretraining_data --input 'corpus/*.txt' \\
        --spm_model vocab/spiece.model --output_dir data/ --max_seq_length 128 \\
        --max_predictions_per_seq 20 --processes 2
    python -m albert.create_pretraining_data --input enwiki-latest-pages-articles.xml.bz2 \\
        --input_format wikipedia --spm_model vocab/spiece.model --output_dir /fsx/albert_data ...

Output: `<output_dir>/train/part-00000-of-000NN.tfrecord` (and `validation/` with
--validation_fraction), google-research BERT/ALBERT feature format, plus `summary.json`. A
progress bar on stderr (--no_progress: none) shows the input read of its total, with the
instances made and their rate.

How it works, and why it scales (each step is a module of albert.data):
- `workers`: reader processes stream documents from the input files (several files at once) in
  chunks of --docs_per_chunk documents; --processes worker processes turn chunks into serialized
  records (`chunks`). Chunk c of file f, duplicate d, uses a random generator seeded by
  (seed, f, c, d) alone.
- `shuffle`: every record gets a random 64-bit key from that generator. The key's range picks
  its shard (so every shard is a random sample of the whole corpus, duplicates included), and each
  shard is written in key order (so its order is a uniform random permutation). Records are first
  appended to one temporary bucket file per shard, in whatever order they arrive; a bucket is then
  sorted by key in memory if it fits in --shuffle_buffer_mb, or first split by key range into
  smaller buckets. Sorting by keys that only depend on the seed makes the output byte-identical
  for any --processes or --shuffle_buffer_mb, and memory does not grow with the corpus.
- `output_dir`: everything is written into a temporary sibling directory, which replaces
  --output_dir only when the run has succeeded (an existing non-empty directory needs
  --overwrite). A failed or killed run leaves --output_dir as it was; the next run removes the
  leftovers.
- `report`: what was read, skipped and written: summary.json and the closing line.
"""

from __future__ import annotations

import errno
import json
import logging
import os
import resource
import shutil
import signal
import sys
import threading
import time

from albert.cli import flags
from albert.data.chunks import GeneratorSettings
from albert.data.corpus import FORMATS, check_input, expand_inputs
from albert.data.output_dir import (
    check_output_dir,
    commit,
    make_work_dir,
    no_space_message,
    remove_stale_temporaries,
)
from albert.data.pretraining import InstanceMaker, InstanceOptions
from albert.data.progress import InputProgress
from albert.data.report import Totals, closing_line, summary
from albert.data.tokenization import vocab_checksum
from albert.data.workers import generate
from albert.errors import FlagError, OutputError

logger = logging.getLogger("albert.create_pretraining_data")


def build_parser() -> flags.Parser:
    p = flags.Parser(description=__doc__.split("\n\n")[0])
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
    return p


def parse_args(argv=None):
    return build_parser().parse_args(argv)


def _check_args(args) -> None:
    if args.num_shards < 1:
        raise FlagError(f"--num_shards must be at least 1, got {args.num_shards}")
    if args.dupe_factor < 1:
        raise FlagError(f"--dupe_factor must be at least 1, got {args.dupe_factor}")
    if args.processes < 1:
        raise FlagError(f"--processes must be at least 1, got {args.processes}")
    if args.readers < 0:
        raise FlagError(f"--readers must be 0 (automatic) or more, got {args.readers}")
    if not 0 <= args.validation_fraction < 1:
        raise FlagError(f"--validation_fraction must be in [0, 1), got {args.validation_fraction}")
    if args.docs_per_chunk < 1:
        raise FlagError(f"--docs_per_chunk must be at least 1, got {args.docs_per_chunk}")
    if not args.shuffle_buffer_mb > 0:
        raise FlagError(f"--shuffle_buffer_mb must be positive, got {args.shuffle_buffer_mb}")
    if not args.text_field:
        raise FlagError("--text_field must not be empty")


def _allow_open_files(needed: int) -> None:
    """One bucket file per shard stays open while records arrive."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft >= needed:
        return
    if hard != resource.RLIM_INFINITY and hard < needed:
        raise FlagError(f"--num_shards needs {needed} open files, but this system allows "
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
    maker = InstanceMaker(args.spm_model, options)  # fail fast: model, its text rule, options
    # Which vocabulary the ids are of, for the summary: run_pretraining compares it. keep_accents:
    # the text rule the records were made under, the vocabulary's (tokenization.text_rule).
    vocabulary = {"spm_model": os.path.abspath(args.spm_model),
                  "sha256": vocab_checksum(args.spm_model), "vocab_size": maker.vocab_size,
                  "keep_accents": maker.keep_accents}
    del maker
    out = os.path.abspath(args.output_dir)
    check_output_dir(out, args.overwrite, [*files, args.spm_model])
    val_shards = max(1, args.num_shards // 8) if args.validation_fraction > 0 else 1
    _allow_open_files(args.num_shards + val_shards + 64)
    settings = GeneratorSettings(os.path.abspath(args.spm_model), options, args.input_format,
                                 args.text_field, args.docs_per_chunk, args.dupe_factor,
                                 args.seed, args.validation_fraction,
                                 (args.num_shards, val_shards))
    remove_stale_temporaries(out)
    start = time.time()
    work = make_work_dir(out)
    committed = False
    progress = InputProgress(files, "instances", enabled=not args.no_progress)
    try:
        try:
            records = generate(settings, files, work, args.processes, args.readers, args.gzip,
                               int(args.shuffle_buffer_mb * 2**20), totals, progress)
        finally:
            progress.close()
        shutil.rmtree(os.path.join(work, ".buckets"))
        train, val = sum(records["train"]), sum(records["validation"])
        if args.validation_fraction > 0 and val == 0:
            totals.warn(f"--validation_fraction {args.validation_fraction} put none of the "
                        f"{totals.stats.documents} documents in the validation set: no "
                        "validation/ written; use a larger fraction to validate")
        elapsed = time.time() - start
        settings_given = {k: v for k, v in vars(args).items() if k not in ("input", "no_progress")}
        result = {**summary(totals, records, files, out, elapsed, args.gzip, settings_given),
                  "vocabulary": vocabulary}
        with open(os.path.join(work, "summary.json"), "w", encoding="utf-8") as f:
            json.dump(result, f, indent=2)
            f.write("\n")
        commit(work, out)
        committed = True
    except OSError as e:
        if e.errno == errno.ENOSPC:
            raise OutputError(no_space_message(e)) from None
        raise
    finally:
        if not committed:
            shutil.rmtree(work, ignore_errors=True)
    logger.info("%d train and %d validation instances in %.1fs", train, val, elapsed)
    return result


def _exit_on_sigterm(signum, frame):
    # Unwinds through run()'s cleanup: workers stopped, temporary directory removed.
    raise SystemExit(128 + signum)


def run_command(args) -> int:
    """run(args) as the command runs it: SIGTERM unwinds through its cleanup, the closing line
    printed; its exit status returned (to a caller in-process too): 2 for the user's errors
    (one line, user_errors), 1 for a worker that died."""
    in_main_thread = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, _exit_on_sigterm) if in_main_thread else None
    try:
        with flags.user_errors():  # a bad flag or input, a full disk: one line and status 2
            result = run(args)
    except SystemExit as e:  # user_errors' (or SIGTERM's) status, returned to a caller in-process
        return e.code
    except RuntimeError as e:  # a worker that died, or a bug in one (its traceback): status 1
        print(f"error: {e}", file=sys.stderr)
        return 1
    finally:
        if in_main_thread:
            signal.signal(signal.SIGTERM, previous)
    print(closing_line(result, args.output_dir))
    return 0


def main(argv=None):
    return flags.run_main(parse_args, run_command, argv, needs_tensorflow=False)  # no TensorFlow


if __name__ == "__main__":
    sys.exit(main())
