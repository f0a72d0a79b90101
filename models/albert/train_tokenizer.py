"""Train an ALBERT-compatible SentencePiece unigram vocabulary.

    python -m albert.train_tokenizer --input 'corpus/*.txt' --vocab_size 30000 --output_dir vocab/

Writes `spiece.model`, `spiece.vocab` and `tokenizer_config.json`, so both our tools and
`transformers.AlbertTokenizer.from_pretrained(output_dir)` load the directory. Ids 0-4 are
<pad>, <unk>, [CLS], [SEP], [MASK], as in every published ALBERT vocabulary. The text is normalised
(lowercase, accents stripped) exactly as the tokenizer will see it at training time.
"""

from __future__ import annotations

import argparse
import logging
import os
import random
import shutil
import sys
import tempfile

from albert.data.text import expand_inputs, iter_lines
from albert.tokenization import CLS, MASK, SEP, load_spm, preprocess_text, write_tokenizer_files

logger = logging.getLogger("albert.train_tokenizer")


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--input", nargs="+", required=True, help="text files or globs")
    p.add_argument("--output_dir", required=True)
    p.add_argument("--vocab_size", type=int, default=30000)
    p.add_argument("--character_coverage", type=float, default=0.99995)
    p.add_argument("--max_sentences", type=int, default=10_000_000,
                   help="sample at most this many lines (SentencePiece input_sentence_size)")
    p.add_argument("--seed", type=int, default=12345)
    p.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    return p.parse_args(argv)


def train(args) -> str:
    import sentencepiece as spm

    files = expand_inputs(args.input)
    if args.vocab_size < 10:
        raise ValueError(f"--vocab_size must be at least 10, got {args.vocab_size}")
    os.makedirs(args.output_dir, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        text_path = os.path.join(tmp, "normalized.txt")
        lines = 0
        with open(text_path, "w", encoding="utf-8") as out:
            for line in iter_lines(files):
                line = preprocess_text(line)
                if line:
                    out.write(line + "\n")
                    lines += 1
        if lines == 0:
            raise ValueError(f"no text in {', '.join(files)}")
        logger.info("training a %d-piece unigram vocabulary on %d lines", args.vocab_size, lines)
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
                input_sentence_size=args.max_sentences,
                shuffle_input_sentence=True,
                seed_sentencepiece_size=1_000_000,
                num_threads=max(1, args.threads),
                # Text is already normalised by preprocess_text; keep SentencePiece's default NFKC
                # so its precompiled charsmap matches what transformers rebuilds from the model.
                minloglevel=2,
            )
        except RuntimeError as e:
            msg = str(e)
            if "Vocabulary size too high" in msg or "vocab_size" in msg:
                raise ValueError(
                    f"--vocab_size {args.vocab_size} is too large for this corpus ({lines} lines): "
                    f"{msg.strip().rstrip('.')}. Use a smaller --vocab_size or more text."
                ) from None
            raise
        load_spm(prefix + ".model")  # checks the special-token ids
        shutil.copyfile(prefix + ".vocab", os.path.join(args.output_dir, "spiece.vocab"))
        write_tokenizer_files(prefix + ".model", args.output_dir)
    return os.path.join(args.output_dir, "spiece.model")


def main(argv=None):
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    args = parse_args(argv)
    random.seed(args.seed)
    try:
        path = train(args)
    except (ValueError, FileNotFoundError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
