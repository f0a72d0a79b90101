"""Check pretraining TFRecord shards before a long run: read every record of every file.

    python -m albert.check_records 'data/train/*' data/validation \\
        [--max_seq_length 128 --max_predictions_per_seq 20] [--spm_model vocab/spiece.model] \\
        [--filesystem_prefix /fsx] [--stats]

Lists each bad shard with the reason (corrupt or truncated at record k, a record of the wrong
shape, unreadable, with --spm_model or --vocab_size a token id outside the vocabulary) and ends
with one summary line. Exit status 0 when every file is good, 1 when any is bad, 2 for a usage
error (no files match, a bad flag). Without the two shape flags, every record is checked against
the shapes of the first record found (a directory that mixes shards of two generator runs is caught
either way). Patterns are resolved as the trainer resolves them: directories, globs and comma lists
under --filesystem_prefix, hidden and .tmp files left out.

--stats then compares the good files' statistics (masked share, masked runs' lengths in words, the
[MASK] / random / kept split, SOP label 1 share, sequence fill) with what google-research/albert's
create_pretraining_data makes of the same text (albert.data.record_stats) and prints a table. It
takes the vocabulary (--spm_model) and the corpus and settings from the generator's summary.json
beside the files (give the whole output directory: the sequence rows are of the whole corpus); the
exit status is the files' still.
"""

from __future__ import annotations

import os
import sys

from tqdm import tqdm

from albert.cli import flags
from albert.data.record_stats import (
    REPEATS,
    Comparison,
    Vocabulary,
    corpus_sentence_lengths,
    find_summary,
    read_summary,
    table,
)
from albert.data.tokenization import load_spm, text_rule
from albert.errors import AlbertError, FlagError


def build_parser() -> flags.Parser:
    p = flags.Parser(description=__doc__.split("\n\n")[0])
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
    p.add_argument("--stats", action="store_true",
                   help="compare the records' statistics with google-research's on the same text")
    p.add_argument("--no_progress", action="store_true", help="no progress bar")
    return p


def parse_args(argv=None):
    p = build_parser()
    args = p.parse_args(argv)
    if args.spm_model and args.vocab_size:
        p.error("pass --spm_model or --vocab_size, not both")
    for flag in ("max_seq_length", "max_predictions_per_seq", "vocab_size"):
        value = getattr(args, flag)
        if value is not None and value < 1:
            p.error(f"--{flag} must be >= 1, got {value}")
    return args


def vocabulary_size(args) -> tuple[int | None, str]:
    """(the vocabulary's size or None, how it was given): run_main's prepare step, before
    TensorFlow loads, so a wrong --spm_model path is said at once."""
    if args.spm_model:
        vocab_size = load_spm(args.spm_model).GetPieceSize()
        return vocab_size, f"--spm_model {args.spm_model}, {vocab_size} pieces"
    return args.vocab_size, f"--vocab_size {args.vocab_size}"


def check(args, vocabulary: tuple[int | None, str]) -> int:
    vocab_size, vocabulary = vocabulary
    # TensorFlow (albert.data.reader) only now, once the flags and the vocabulary are checked
    # (vocabulary_size): --help and a bad flag are answered without it.
    from albert.data import reader

    files = reader.resolve_files(args.patterns, args.filesystem_prefix)
    seq, preds = args.max_seq_length, args.max_predictions_per_seq
    source = "from the flags"
    if seq is None or preds is None:
        found = reader.first_record_shapes(files)
        if found:
            seq = seq if seq is not None else found[0]
            preds = preds if preds is not None else found[1]
            source = f"from the first record of {found[2]}"
    spec = reader.pretraining_feature_spec(seq, preds) if seq is not None else None
    # Before the scan: a missing vocabulary is said at once, not after every file is read.
    stats = _stats_sources(files, seq, preds, args.spm_model) if args.stats and spec else None

    bar = tqdm(unit=" rec", file=sys.stderr, mininterval=1.0, disable=args.no_progress or None)
    checks = []
    try:
        for i, path in enumerate(files):
            bar.set_description(f"file {i + 1}/{len(files)} {os.path.basename(path)}")
            result = reader.scan_file(path, spec, on_records=bar.update, vocab_size=vocab_size)
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
    good = [c.path for c in checks if not c.problem and c.records]
    if args.stats:
        print(statistics(stats, reader.unpadded_records(good, seq, preds), seq, preds)
              if good else "statistics: no good records to compare", flush=True)
    return 1 if bad else 0


def _stats_sources(files, seq, preds, spm_model):
    """(vocabulary, summary.json of these records or {}) for --stats."""
    summary_path = find_summary(files)
    summary = read_summary(summary_path) if summary_path else {}
    settings = summary.get("settings", {})
    if (settings.get("max_seq_length"), settings.get("max_predictions_per_seq")) != (seq, preds):
        summary = {}  # another run's (or none): its corpus and settings are not these
    spm_model = spm_model or summary.get("vocabulary", {}).get("spm_model")
    if not spm_model:
        raise FlagError("--stats needs the vocabulary the records were made with: pass "
                        "--spm_model (no summary.json of these records names one)")
    return Vocabulary(load_spm(spm_model), text_rule(spm_model)), summary


def statistics(sources, records, seq, preds) -> str:
    """--stats: the table comparing `records` (the good files' records, as
    albert.data.reader.unpadded_records yields them) with google-research's on the same
    text."""
    vocab, summary = sources
    settings = summary.get("settings", {})
    keys = ("masked_lm_prob", "ngram", "short_seq_prob", "dupe_factor")
    comparison = Comparison(vocab, seq, preds, {k: settings[k] for k in keys if k in settings})
    count = 0
    for record in records:
        comparison.add(*record)
        count += 1
    inputs = summary.get("input_files", [])
    missing = [f for f in inputs if not os.path.isfile(f)]
    if not inputs or missing:
        why = (f"the corpus {missing[0]} is gone" if missing else
               "no summary.json of these records names their corpus")
        packing = f"sequences: n/a ({why})"
    else:
        try:
            comparison.add_packing(corpus_sentence_lengths(
                inputs, settings.get("input_format", "auto"), settings.get("text_field", "text"),
                vocab.sp, vocab.keep_accents))
            packing = (f"sequences: google's packing of {', '.join(inputs)}, "
                       f"{comparison.passes} passes (ours: {comparison.settings['dupe_factor']})")
        except (AlbertError, OSError) as e:  # the records' rows are still worth showing
            packing = f"sequences: n/a (the corpus cannot be read: {e})"
    masking = (f"masking: google's masking of these records' own sequences, {REPEATS} times "
               f"(masked_lm_prob {comparison.settings['masked_lm_prob']}, "
               f"ngram {comparison.settings['ngram']}, max_predictions_per_seq {preds})")
    return table(comparison.rows(), count, masking, packing)


def main(argv=None) -> int:
    # The reader logs how it took a pattern apart (a comma split): run_main's logging, stderr.
    return flags.run_main(parse_args, check, argv, prepare=vocabulary_size)


if __name__ == "__main__":
    sys.exit(main())
