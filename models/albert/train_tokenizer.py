"""Train an ALBERT-compatible SentencePiece unigram vocabulary.

    python -m albert.train_tokenizer --input 'corpus/*.txt' --vocab_size 30000 --output_dir vocab/
    python -m albert.train_tokenizer --input enwiki-latest-pages-articles.xml.bz2 \\
        --input_format wikipedia --vocab_size 30000 --output_dir vocab/

Writes `spiece.model`, `spiece.vocab`, `tokenizer_config.json` and `tokenizer.json` (the fast
tokenizer, converted), so both our tools and
`transformers.AutoTokenizer.from_pretrained(output_dir)` load the directory, the latter without
protobuf, and `summary.json`
(what was read and skipped, and the model's sha256). An existing spiece.model is replaced only
with --overwrite: records and checkpoints made with it would not fit a new one. The same input and
flags give the same spiece.model bytes (no temporary paths are kept in it). Ids 0-4 are
<pad>, <unk>, [CLS], [SEP], [MASK], as in every published ALBERT vocabulary. The text is normalised
exactly as every path will see it (albert.data.tokenization.preprocess_text: lowercased, marks and
accents kept, special tokens typed in the text read as text): the text rule of a new vocabulary,
recorded as keep_accents true in its tokenizer_config.json, which every path reads
(tokenization.text_rule). Google's published vocabularies keep their own rule, accents stripped.

Inputs are read as `create_pretraining_data` reads them (albert.data.corpus: files, directories,
globs; text, JSONL, Parquet, Wikipedia dumps; .gz/.bz2/.xz), one sentence at a time. A seeded
uniform sample of at most --max_sentences sentences (reservoir sampling, as SentencePiece's
input_sentence_size) is all that is kept, so memory is bounded by the sample, not by the corpus.
"""

from __future__ import annotations

import json
import logging
import os
import random
import re
import shutil
import sys
import tempfile
from collections.abc import Iterator

from albert.cli import flags
from albert.data.corpus import (
    FORMATS,
    InputSkips,
    ReadStats,
    check_input,
    chunked,
    expand_inputs,
    finish_document,
    map_chunks,
    read_documents,
)
from albert.data.progress import InputProgress
from albert.data.tokenization import (
    CLS,
    FAST_TOKENIZER_NAME,
    MASK,
    SEP,
    load_spm,
    preprocess_text,
    vocab_checksum,
    write_tokenizer_files,
)
from albert.errors import DataError, FlagError, OutputError

logger = logging.getLogger("albert.train_tokenizer")
_DOCS_PER_TASK = 64
_OUTPUTS = ("spiece.model", "spiece.vocab", "tokenizer_config.json", FAST_TOKENIZER_NAME,
            "summary.json")


def build_parser() -> flags.Parser:
    p = flags.Parser(description=__doc__.split("\n\n")[0])
    p.add_argument("--input", nargs="+", required=True,
                   help="files, directories, globs or comma lists; .gz/.bz2/.xz are decompressed")
    p.add_argument("--input_format", choices=FORMATS, default="auto",
                   help="as create_pretraining_data's --input_format")
    p.add_argument("--text_field", default="text", help="the text field of jsonl/parquet input")
    p.add_argument("--output_dir", required=True)
    p.add_argument("--overwrite", action="store_true",
                   help="replace the spiece.model already in --output_dir (records and "
                        "checkpoints made with it will not fit the new one)")
    p.add_argument("--vocab_size", type=int, default=30000)
    p.add_argument("--character_coverage", type=float, default=0.99995)
    p.add_argument("--max_sentences", type=int, default=10_000_000,
                   help="train on a seeded uniform sample of at most this many sentences "
                        "(SentencePiece's input_sentence_size); bounds memory")
    p.add_argument("--seed", type=int, default=12345, help="seeds the sentence sample")
    p.add_argument("--threads", type=int, default=os.cpu_count() or 1,
                   help="SentencePiece training threads (the vocabulary depends on it: pass the "
                        "same number to train the same vocabulary on another machine)")
    p.add_argument("--processes", type=int, default=os.cpu_count() or 1,
                   help="processes turning documents into sentences (wikitext parsing)")
    p.add_argument("--no_progress", action="store_true",
                   help="no progress bar (stderr) while the input is read")
    return p


def parse_args(argv=None):
    return build_parser().parse_args(argv)


def _normalized_sentences(raw_docs: list) -> tuple[list[str], ReadStats]:
    """Raw documents -> their sentences as the tokenizer will see them: under a new
    vocabulary's text rule, accents kept (written into its tokenizer_config.json)."""
    stats = ReadStats()
    out = []
    for raw in raw_docs:
        for sentence in finish_document(raw, stats) or ():
            text = preprocess_text(sentence, keep_accents=True)
            if text:
                out.append(text)
    return out, stats


def iter_sentences(files: list[str], fmt: str, text_field: str, processes: int,
                   stats: ReadStats, progress: InputProgress | None = None) -> Iterator[str]:
    """Normalised sentences of every document, in corpus order (so the sample is seeded);
    `progress` shows the bytes read and the documents found."""
    progress = progress or InputProgress(files, "documents", enabled=False)

    def chunks():
        for index, path in enumerate(files):
            position = progress.position(path)
            for _, _, raw in chunked(read_documents(path, fmt, text_field, stats),
                                     _DOCS_PER_TASK):
                progress.read(index, position())
                progress.counted(stats.documents)  # of the chunks done (a few are in flight)
                yield raw
            progress.done(index)

    yield from map_chunks(_normalized_sentences, chunks(), processes, stats)
    progress.counted(stats.documents)


def reservoir_sample(items: Iterator[str], size: int, seed: int) -> tuple[list[str], int]:
    """A uniform sample of at most `size` items, the same for the same seed and input order
    (Algorithm R). Returns (sample, number of items seen)."""
    rng = random.Random(seed)
    sample: list[str] = []
    seen = 0
    for seen, item in enumerate(items, 1):
        if seen <= size:
            sample.append(item)
        else:
            j = rng.randrange(seen)
            if j < size:
                sample[j] = item
    return sample, seen


def train_with_summary(args) -> dict:
    """Train and write the vocabulary; returns what was read, sampled and skipped."""
    # sentencepiece only for the training itself: --help, a bad flag and the reader workers
    # (which import this module for _normalized_sentences) start without it.
    import sentencepiece as spm

    if args.vocab_size < 10:
        raise FlagError(f"--vocab_size must be at least 10, got {args.vocab_size}")
    if args.max_sentences < 1:
        raise FlagError(f"--max_sentences must be at least 1, got {args.max_sentences}")
    if args.processes < 1:
        raise FlagError(f"--processes must be at least 1, got {args.processes}")
    _check_output_dir(args.output_dir, args.overwrite)
    inputs = InputSkips()
    files = expand_inputs(args.input, inputs)
    if inputs.describe():
        logger.warning("warning: %s", inputs.describe())
    for path in files:
        check_input(path, args.input_format, args.text_field)
    stats = ReadStats()
    progress = InputProgress(files, "documents", enabled=not args.no_progress)
    try:
        sentences = iter_sentences(files, args.input_format, args.text_field, args.processes,
                                   stats, progress)
        # Our own seeded sample: SentencePiece's reservoir ignores its seed when fed an iterator.
        sample, seen = reservoir_sample(sentences, args.max_sentences, args.seed)
    finally:
        progress.close()
    if not sample:
        raise DataError(_no_text_message(files, stats))
    with tempfile.TemporaryDirectory() as tmp:
        text_path = os.path.join(tmp, "sample.txt")
        with open(text_path, "w", encoding="utf-8") as f:
            for sentence in sample:
                f.write(sentence + "\n")
        sampled = len(sample)
        del sample  # SentencePiece loads its own copy
        logger.info("training a %d-piece unigram vocabulary on %d of %d sentences",
                    args.vocab_size, sampled, seen)
        prefix = os.path.join(tmp, "spiece")
        try:
            spm.SentencePieceTrainer.train(
                input=text_path,
                model_prefix=prefix,
                vocab_size=args.vocab_size,
                model_type="unigram",
                pad_id=0, unk_id=1, bos_id=-1, eos_id=-1,
                pad_piece="<pad>", unk_piece="<unk>",
                control_symbols=[CLS, SEP, MASK],
                character_coverage=args.character_coverage,
                input_sentence_size=0,  # the file is the sample already: load all of it
                shuffle_input_sentence=False,
                seed_sentencepiece_size=1_000_000,
                num_threads=max(1, args.threads),
                # Text is already normalised by preprocess_text; keep SentencePiece's default NFKC
                # so its precompiled charsmap matches what transformers rebuilds from the model.
                minloglevel=2,
            )
        except RuntimeError as e:
            message = _vocab_size_message(str(e), args, sampled)
            if message:
                raise FlagError(message) from None
            raise
        _drop_training_paths(prefix + ".model")
        load_spm(prefix + ".model")  # checks the special-token ids
        staged = os.path.join(tmp, "out")
        write_tokenizer_files(prefix + ".model", staged, keep_accents=True)
        shutil.copyfile(prefix + ".vocab", os.path.join(staged, "spiece.vocab"))
        skipped = {k: v for k, v in {**stats.as_dict(), **inputs.as_dict()}.items()
                   if k not in ("files", "lines", "pages", "documents") and v}
        summary = {
            "spm_model": os.path.join(args.output_dir, "spiece.model"),
            "sha256": vocab_checksum(os.path.join(staged, "spiece.model")),
            "vocab_size": args.vocab_size,
            "documents": stats.documents,
            "sentences": seen,
            "sampled_sentences": sampled,
            "skipped": skipped,
            "input_files": files,
            "settings": {k: v for k, v in vars(args).items()
                         if k not in ("input", "processes", "overwrite", "no_progress")},
        }
        with open(os.path.join(staged, "summary.json"), "w", encoding="utf-8") as f:
            json.dump(summary, f, indent=2)
            f.write("\n")
        _install(staged, args.output_dir)
    return summary


def _vocab_size_message(error: str, args, sampled: int) -> str | None:
    """SentencePiece's refusal of --vocab_size, in the flag's words: too large for the text (it
    says "too high" and the most it can make) or too small for the characters the text needs;
    None for any other error."""
    if m := re.search(r"Vocabulary size too high \((\d+)\)\. Please set it to a value <= (\d+)",
                      error):
        return (f"--vocab_size {args.vocab_size} is too large for a sample of {sampled} "
                f"sentences: it makes at most {m.group(2)} pieces. Use a --vocab_size of at most "
                f"{m.group(2)}, more text or a larger --max_sentences.")
    if m := re.search(r"Vocabulary size is smaller than required_chars\. (\d+) vs (\d+)", error):
        return (f"--vocab_size {args.vocab_size} is too small: the sample's characters at "
                f"--character_coverage {args.character_coverage} and the special pieces need "
                f"{m.group(2)}. Use a --vocab_size of at least {m.group(2)}, or a lower "
                "--character_coverage.")
    if "vocab_size" in error.lower() or "vocabulary size" in error.lower():
        reason = error.strip().rstrip(".")
        return f"--vocab_size {args.vocab_size} cannot be trained on {sampled} sentences: {reason}."
    return None


def _check_output_dir(out: str, overwrite: bool) -> None:
    """Before any work: --output_dir must be a directory (or not exist yet), and a vocabulary in
    it is replaced only on request."""
    if os.path.lexists(out) and not os.path.isdir(out):
        raise FlagError(f"--output_dir {out} exists and is not a directory; choose a directory "
                        "(it is created when missing)")
    existing = os.path.join(out, "spiece.model")
    if os.path.exists(existing) and not overwrite:
        raise FlagError(
            f"--output_dir {out} already holds spiece.model (sha256 "
            f"{vocab_checksum(existing)[:12]}...); records and checkpoints made with it would "
            "not fit a new vocabulary: choose another --output_dir, or pass --overwrite to "
            "replace it")


def _drop_training_paths(model: str) -> None:
    """Clear the temporary input and output paths (different on every run) from the model's
    trainer_spec, so that the same input and flags give the same bytes and the same checksum.
    The thread count stays: it changes the vocabulary SentencePiece trains."""
    from sentencepiece import sentencepiece_model_pb2  # protobuf: as in train_with_summary

    proto = sentencepiece_model_pb2.ModelProto()
    with open(model, "rb") as f:
        proto.ParseFromString(f.read())
    for field in ("input", "model_prefix"):
        proto.trainer_spec.ClearField(field)
    with open(model, "wb") as f:
        f.write(proto.SerializeToString(deterministic=True))


def _install(staged: str, out: str) -> None:
    """Move the finished files into --output_dir, each replaced in one step (a copy under a
    hidden name, then a rename): an interrupted run leaves each file old or new, never cut."""
    try:
        os.makedirs(out, exist_ok=True)
    except OSError as e:
        raise OutputError(f"cannot create --output_dir {out}: {e.strerror}") from None
    for name in _OUTPUTS:
        partial = os.path.join(out, f".{name}.partial")
        shutil.copyfile(os.path.join(staged, name), partial)
        os.replace(partial, os.path.join(out, name))


def _no_text_message(files: list[str], stats: ReadStats) -> str:
    if stats.lines and stats.bad_lines == stats.lines:
        return (f"no text: every line of the input ({stats.lines} lines) was skipped as invalid "
                "UTF-8; convert the files to UTF-8 (e.g. iconv -f latin1 -t utf-8)")
    return f"no text in {', '.join(files)}"


def train(args) -> str:
    """Train and write the vocabulary; returns the path of spiece.model."""
    return train_with_summary(args)["spm_model"]


def train_and_report(args) -> int:
    """train_with_summary(args) as the command runs it: its closing line; its exit status
    returned (to a caller in-process too), 2 for the user's errors (one line, user_errors)."""
    try:
        with flags.user_errors():  # a bad flag or input, an --output_dir that cannot be written
            summary = train_with_summary(args)
    except SystemExit as e:  # user_errors' status 2, returned to a caller in-process
        return e.code
    skipped = ", ".join(f"{v} {k.replace('_', ' ')}" for k, v in summary["skipped"].items())
    print(f"wrote {summary['spm_model']}: trained on {summary['sampled_sentences']} of "
          f"{summary['sentences']} sentences from {summary['documents']} documents"
          + (f"; skipped {skipped}" if skipped else ""))
    return 0


def main(argv=None):
    return flags.run_main(parse_args, train_and_report, argv, needs_tensorflow=False)


if __name__ == "__main__":
    sys.exit(main())
