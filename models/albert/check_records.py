"""Check pretraining TFRecord shards before a long run: read every record of every file.

    python -m albert.check_records 'data/train/*' data/validation \\
        [--max_seq_length 128 --max_predictions_per_seq 20] [--spm_model vocab/spiece.model] \\
        [--filesystem_prefix /fsx]

Lists each bad shard with the reason (corrupt or truncated at record k, a record of the wrong
shape, unreadable, with --spm_model or --vocab_size a token id outside the vocabulary) and ends
with one summary line. Exit status 0 when every file is good, 1 when any is bad, 2 for a usage
error (no files match, a bad flag). Without the two shape flags, every record is checked against
the shapes of the first record found (a directory that mixes shards of two generator runs is caught
either way). Patterns are resolved as the trainer resolves them: directories, globs and comma lists
under --filesystem_prefix, hidden and .tmp files left out.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys

from tqdm import tqdm

from albert.cli import flags
from albert.data.tokenization import load_spm
from albert.errors import DataError


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("patterns", nargs="+", help="TFRecord files, directories or globs")
    p.add_argument("--filesystem_prefix", default=".",
                   help="relative patterns are taken under this directory, as in the trainer")
    p.add_argument("--max_seq_length", type=int, default=None,
                   help="expected sequence length (default: the first record's)")
    p.add_argument("--max_predictions_per_seq", type=int, default=None,
                   help="expected masked positions per sequence (default: the first record's)")
    p.add_argument("--spm_model", default=None,
                   help="check that every token id is one of this vocabulary's (the pretraining "
                        "run's --spm_model)")
    p.add_argument("--vocab_size", type=int, default=None,
                   help="check that every token id is below this (the model's vocab_size)")
    p.add_argument("--no_progress", action="store_true", help="no progress bar")
    args = p.parse_args(argv)
    if args.spm_model and args.vocab_size:
        p.error("pass --spm_model or --vocab_size, not both")
    for flag in ("max_seq_length", "max_predictions_per_seq", "vocab_size"):
        value = getattr(args, flag)
        if value is not None and value < 1:
            p.error(f"--{flag} must be >= 1, got {value}")
    return args


def _shapes_fromfirst_record(files):
    """(max_seq_length, max_predictions_per_seq, file) from the first record found, else None."""
    # TensorFlow (albert.data.reader too) only once the flags are checked: --help and a bad
    # flag are answered without it.
    import tensorflow as tf

    from albert.data.reader import first_record

    for path in files:
        try:
            record = first_record(path)
        except DataError:
            continue  # the scan reports it
        if record is None:
            continue
        feature = tf.train.Example.FromString(record).features.feature
        if "input_ids" not in feature or "masked_lm_positions" not in feature:
            raise DataError(f"{path}: the first record is not a pretraining example (no "
                            "input_ids / masked_lm_positions); pass --max_seq_length and "
                            "--max_predictions_per_seq to check against them")
        return (len(feature["input_ids"].int64_list.value),
                len(feature["masked_lm_positions"].int64_list.value), path)
    return None


def check(args) -> int:
    vocab_size, vocabulary = args.vocab_size, f"--vocab_size {args.vocab_size}"
    if args.spm_model:  # before TensorFlow loads: a wrong path is said at once
        vocab_size = load_spm(args.spm_model).GetPieceSize()
        vocabulary = f"--spm_model {args.spm_model}, {vocab_size} pieces"

    # TensorFlow (albert.data.reader) only now, after the vocabulary: see above.
    from albert.data.reader import pretraining_feature_spec, resolve_files, scan_file

    files = resolve_files(args.patterns, args.filesystem_prefix)
    seq, preds = args.max_seq_length, args.max_predictions_per_seq
    source = "from the flags"
    if seq is None or preds is None:
        found = _shapes_fromfirst_record(files)
        if found:
            seq = seq if seq is not None else found[0]
            preds = preds if preds is not None else found[1]
            source = f"from the first record of {found[2]}"
    spec = pretraining_feature_spec(seq, preds) if seq is not None else None

    bar = tqdm(unit=" rec", file=sys.stderr, mininterval=1.0, disable=args.no_progress or None)
    checks = []
    try:
        for i, path in enumerate(files):
            bar.set_description(f"file {i + 1}/{len(files)} {os.path.basename(path)}")
            result = scan_file(path, spec, on_records=bar.update, vocab_size=vocab_size)
            checks.append(result)
            if result.problem:
                bar.write(f"BAD {path}: {result.problem}", file=sys.stdout)
    finally:
        bar.close()
    bad = [c for c in checks if c.problem]
    empty = [c for c in checks if not c.problem and c.records == 0]
    for c in empty:
        print(f"EMPTY {c.path}: no records")
    kinds = {k: sum(c.kind == k for c in bad)
             for k in ("corrupt", "shape", "unreadable", "vocabulary")}
    shapes = (f"--max_seq_length {seq} --max_predictions_per_seq {preds} ({source})"
              if spec is not None else "no records to take shapes from")
    records = sum(c.records for c in checks)
    verdict = (f"{len(bad)} bad ({kinds['corrupt']} corrupt, {kinds['shape']} wrong shape, "
               f"{kinds['unreadable']} unreadable"
               + (f", {kinds['vocabulary']} outside the vocabulary" if vocab_size else "")
               + ")" if bad else "all good")
    if vocab_size:
        shapes += f", token ids below {vocab_size} ({vocabulary})"
    print(f"checked {len(files)} files, {records} good records, shapes {shapes}: {verdict}; "
          f"{len(empty)} empty", flush=True)
    if kinds["vocabulary"]:
        print("the files outside the vocabulary were made with a larger one: pass the "
              "vocabulary the data was made with (its summary.json names it), or regenerate the "
              "data with this one", flush=True)
    return 1 if bad else 0


def main(argv=None) -> int:
    argv = flags.quiet_argv(argv)  # as every tool: --verbose keeps the start-up lines
    # The reader logs how it took a pattern apart (a comma split); stderr, as the errors.
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    logging.getLogger("absl").setLevel(logging.WARNING)
    args = parse_args(argv)
    with flags.user_errors():  # no files match, a missing or wrong --spm_model: one line, status 2
        return check(args)


if __name__ == "__main__":
    sys.exit(main())
