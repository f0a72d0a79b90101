"""`python -m albert.corpus_text --input ... --output text.txt`: the sentences the data tools read
from a corpus, as plain text, one sentence a line and a blank line between documents (what the
model will train on). Reading is `albert.data.corpus`'s, as in create_pretraining_data.
"""

from __future__ import annotations

import contextlib
import os
import sys
import uuid

from albert.cli import flags
from albert.data.corpus import (
    FORMATS,
    ReadStats,
    check_input,
    expand_inputs,
    iter_documents,
    reason_of,
)
from albert.errors import FlagError, OutputError


def build_parser() -> flags.Parser:
    p = flags.Parser(
        prog="python -m albert.corpus_text",
        description="Write the sentences the data tools read from --input as plain text: one "
                    "sentence a line, a blank line between documents (what the model trains on).")
    p.add_argument("--input", nargs="+", required=True,
                   help="files, directories, globs or comma lists; .gz/.bz2/.xz are decompressed")
    p.add_argument("--input_format", choices=FORMATS, default="auto",
                   help="as create_pretraining_data's --input_format")
    p.add_argument("--text_field", default="text", help="the text field of jsonl/parquet input")
    p.add_argument("--output", required=True, help="the text file to write; - for stdout")
    p.add_argument("--max_documents", type=int, default=0,
                   help="stop after this many documents (0: all)")
    p.add_argument("--processes", type=int, default=1,
                   help="processes turning documents into sentences (wikitext parsing)")
    return p


def parse_args(argv=None):
    return build_parser().parse_args(argv)


def write_text(args) -> dict:
    """Writes the text; returns the counts (ReadStats, plus what was written)."""
    if args.processes < 1:
        raise FlagError(f"--processes must be at least 1, got {args.processes}")
    if args.max_documents < 0:
        raise FlagError(f"--max_documents must be 0 (all) or more, got {args.max_documents}")
    files = expand_inputs(args.input)
    to_stdout = args.output == "-"
    if not to_stdout:
        _check_output(args.output, files)
    for path in files:
        check_input(path, args.input_format, args.text_field)
    stats, sentences, written = ReadStats(), 0, 0
    with _written(args.output) as out:
        docs = iter_documents(files, args.input_format, stats, args.text_field, args.processes)
        try:
            for doc in docs:
                out.write(("\n" if written else "") + "\n".join(doc) + "\n")
                sentences += len(doc)
                written += 1
                if written == args.max_documents:
                    break
        finally:
            docs.close()  # stops the worker processes
    return {**stats.as_dict(), "documents_written": written, "sentences": sentences}


def _check_output(output: str, files: list[str]) -> None:
    """Refuse an output that is one of the inputs (by real path or as the same file through a
    hard link): writing it would empty the text before it is read, and a glob that matched last
    run's output would read it back in."""
    if os.path.isdir(output):
        raise OutputError(f"--output {output}: is a directory; give the path of a text file")
    if not os.path.exists(output):
        return
    real, stat = os.path.realpath(output), os.stat(output)
    for path in files:
        if os.path.realpath(path) == real or os.path.samestat(os.stat(path), stat):
            named = "" if path == output else f" (as {path})"
            raise FlagError(f"--output {output} is also one of the --input files{named}; "
                            "writing it would lose the text it holds: give another --output, "
                            "or leave it out of --input")


@contextlib.contextmanager
def _written(output: str):
    """The file to write the text to: stdout for -, else a hidden temporary file beside
    `output` that takes its place only when the text is complete, so an interrupted run leaves
    the previous output (or none), never half a text."""
    if output == "-":
        yield sys.stdout
        return
    directory, name = os.path.split(os.path.abspath(output))
    # Hidden, so that a directory or glob input never reads it; per process, so that two runs
    # writing one output do not write into one temporary file.
    staged = os.path.join(directory, f".{name}.{os.getpid()}-{uuid.uuid4().hex[:8]}.tmp")
    try:
        out = open(staged, "x", encoding="utf-8")
    except OSError as e:
        raise OutputError(f"--output {output}: cannot be written ({reason_of(e)})") from None
    try:
        yield out
        try:
            out.close()
            os.replace(staged, output)
        except OSError as e:
            raise OutputError(f"--output {output}: cannot be written ({reason_of(e)})") from None
    finally:
        out.close()
        if os.path.lexists(staged):
            os.remove(staged)


def run(args) -> int:
    """The text written, its summary line; a bad flag or an input that cannot be read is
    run_main's one line and status 2."""
    try:
        counts = write_text(args)
    except BrokenPipeError:
        # The reader of stdout had enough (| head): not an error. Later flushes go nowhere.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    skipped = ", ".join(f"{v} {k.replace('_', ' ')}" for k, v in counts.items()
                        if v and k not in ("files", "lines", "pages", "documents",
                                           "documents_written", "sentences"))
    # With the text on stdout the summary goes to stderr, so that a pipe gets the text alone.
    print(f"wrote {counts['sentences']} sentences of {counts['documents_written']} documents to "
          f"{args.output}" + (f"; skipped {skipped}" if skipped else ""),
          file=sys.stderr if args.output == "-" else sys.stdout)
    return 0


def main(argv=None) -> int:
    return flags.run_main(parse_args, run, argv, needs_tensorflow=False)  # a data tool


if __name__ == "__main__":
    sys.exit(main())
