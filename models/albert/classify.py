"""Ask a fine-tuned ALBERT classifier (or regression model): one text or pair, or a file of them.

    python -m albert.classify --checkpoint_path serving/1 --text "Set a breakpoint with break."
    python -m albert.classify --checkpoint_path runs/classifier/checkpoints/final \\
        --input texts.jsonl --output labels.jsonl
    python -m albert.classify --checkpoint_path serving/1 --input MNLI/dev_matched.tsv \\
        --text_a sentence1 --text_b sentence2

--checkpoint_path is a SavedModel written by `albert.export --head classification` (or
run_classifier's --export_dir), a run_classifier checkpoint (directory or prefix), or a Hugging
Face classifier directory (a run's final/). Texts become features as run_classifier makes them
(albert.data.classification.featurize at the model's --max_seq_length, from its task card) and
go through the model --batch_size at a time, in input order, each batch padded to its longest
sequence rounded up to 8, as run_classifier's --eval_batch_size batches are: the labels are
run_classifier's predictions.

--input is JSON lines with "text" (and "text_b" for pairs), or a file in any layout
run_classifier reads (.tsv, .csv, .jsonl): --text_a / --text_b name its columns (header names or
0-based positions; positions only with --no_header), by default the columns the model was
fine-tuned on. Each output
line is the input (a JSON line's object, a table row's index and texts, or --text/--text_b) plus
"label" (an input's own "label" is replaced) and "probabilities" ({label: p}, the softmax of
the logits, labels in the model's id order); for a regression model, "score".
"""

from __future__ import annotations

import json
import logging
import os
import sys

import numpy as np
from tqdm import tqdm

from albert.cli.flags import FlagError, Parser, Renamed, run_main
from albert.cli.resolve import column_flag
from albert.cli.serving import (
    check_output_file,
    check_vocabulary_content,
    read_card,
    settle,
    write_jsonl,
)
from albert.data import classification as data
from albert.data.tokenization import load_tokenizer
from albert.errors import CheckpointError
from albert.io.model_dir import vocabulary_file
from albert.model import MODEL_INPUTS

logger = logging.getLogger("albert.classify")

# A model without a task card (from elsewhere, or older) is windowed as run_classifier's defaults.
FEATURE_DEFAULTS = {"max_seq_length": 128}
PAD_TO_MULTIPLE_OF = 8  # run_classifier's --pad_to_multiple_of default: the same batch shapes


def build_parser() -> Parser:
    p = Parser(description=__doc__.split("\n\n")[0])
    p.add_argument("--checkpoint_path", action=Renamed, old=("--model",), required=True,
                   help="classifier SavedModel, run_classifier checkpoint (directory or prefix) "
                        "or Hugging Face classifier directory")
    p.add_argument("--text", default=None, help="one text to classify")
    p.add_argument("--input", default=None,
                   help="JSON lines with \"text\" (and \"text_b\"), or a TSV / CSV / JSONL file "
                        "as run_classifier reads them (see --text_a, --text_b)")
    p.add_argument("--text_b", default=None,
                   help="with --text: the second text of a pair; with --input: the column that "
                        "holds it (default: the model's fine-tuning column)")
    p.add_argument("--text_a", default=None,
                   help="with --input: the column of the (first) text (default: \"text\" in "
                        "JSON lines that have it, else the model's fine-tuning column)")
    p.add_argument("--no_header", action="store_true",
                   help="with --input: a TSV/CSV file without a header row (columns are 0-based "
                        "positions)")
    p.add_argument("--output", default=None, help="write the JSON lines here (default: stdout)")
    p.add_argument("--spm_model", default=None,
                   help="SentencePiece vocabulary (default: the one that comes with "
                        "--checkpoint_path); refused unless it is the one the model was "
                        "fine-tuned with")
    g = p.add_argument_group(
        "features", "the model's own setting by default: the one it was fine-tuned with (the task "
        "card its export carries); a value that differs is refused. A model without a card "
        f"(from elsewhere, or older) uses run_classifier's defaults {FEATURE_DEFAULTS}")
    g.add_argument("--max_seq_length", type=int, default=None,
                   help="default: the model's (see above)")
    p.add_argument("--batch_size", type=int, default=64,
                   help="texts per model call (run_classifier's --eval_batch_size)")
    p.add_argument("--no_progress", action="store_true", help="no progress bar")
    return p


def parse_args(argv=None):
    return build_parser().parse_args(argv)


# -- what is asked --------------------------------------------------------------------------------


def check_args(args) -> None:
    """Flag errors a user can fix, found before TensorFlow is imported."""
    model = args.checkpoint_path
    if not os.path.exists(model) and not os.path.isfile(model + ".index"):
        raise FlagError(f"--checkpoint_path {model} does not exist")
    if (args.text is None) == (args.input is None):
        raise FlagError("give either --text (with --text_b for a pair) or --input")
    if args.text is not None:
        if not args.text.strip():
            raise FlagError("--text is empty")
        if args.text_b is not None and not args.text_b.strip():
            raise FlagError("--text_b is empty")
        for flag in ("text_a", "no_header"):
            if getattr(args, flag):
                raise FlagError(f"--{flag} describes an --input file; with --text give the "
                                "text itself (and --text_b)")
    elif not os.path.isfile(args.input):
        raise FlagError(f"--input {args.input} "
                        + ("is a directory" if os.path.isdir(args.input) else "does not exist"))
    if args.spm_model and not os.path.isfile(args.spm_model):
        raise FlagError(f"--spm_model {args.spm_model} does not exist")
    if args.output:
        check_output_file(args.output, "labels.jsonl")
    if args.max_seq_length is not None and args.max_seq_length < 8:
        raise FlagError(f"--max_seq_length must be at least 8, got {args.max_seq_length}")
    if args.batch_size < 1:
        raise FlagError(f"--batch_size must be >= 1, got {args.batch_size}")


def _first_object(path: str) -> dict:
    with open(path, encoding="utf-8-sig") as f:
        for line in f:
            if line.strip():
                try:
                    found = json.loads(line)
                except json.JSONDecodeError:
                    return {}  # read_examples names the line
                return found if isinstance(found, dict) else {}
    return {}


def input_columns(args, card: dict | None):
    """The columns of --input: --text_a / --text_b; else "text" / "text_b" in JSON lines that
    have them; else the columns the model was fine-tuned on (its card), when the file is read
    the same way (with or without a header); else run_classifier's default, `sentence`."""
    header = not args.no_header
    trained = ((card or {}).get("features") or {}).get("columns")
    if data.file_format(args.input) == "jsonl" and "text" in _first_object(args.input):
        default = ("text", "text_b" if "text_b" in _first_object(args.input) else None)
    elif trained and len(trained) == 4 and bool(trained[3]) == header:
        default = (trained[0], trained[1])
    elif header:
        default = ("sentence", None)
    else:
        default = (None, None)
    text_a = args.text_a if args.text_a is not None else default[0]
    if text_a is None:
        raise FlagError(f"--input {args.input} is read with --no_header: give --text_a (and "
                        "--text_b for a pair) as 0-based column positions")
    text_b = args.text_b if args.text_b is not None else default[1]
    return data.Columns(column_flag(text_a, header, "--text_a"),
                        column_flag(text_b, header, "--text_b"),
                        None, header)


def check_pairs(card: dict | None, pairs: bool, where: str, model: str) -> None:
    """A model fine-tuned on pairs of texts asked about single texts, or the reverse: its
    features would not be those it learnt from."""
    trained = ((card or {}).get("features") or {}).get("columns")
    if not trained or len(trained) != 4:
        return
    trained_pairs = trained[1] is not None
    if trained_pairs and not pairs:
        raise FlagError(f"--checkpoint_path {model} was fine-tuned on pairs of texts (columns "
                        f"{trained[0]}, {trained[1]}) but {where} gives single texts: give the "
                        "second text with --text_b")
    if pairs and not trained_pairs:
        raise FlagError(f"--checkpoint_path {model} was fine-tuned on single texts (column "
                        f"{trained[0]}) but {where} gives pairs: drop --text_b")


def read_inputs(args, card: dict | None) -> tuple[list, list[dict]]:
    """(examples, rows): albert.data.classification examples to featurize, and the JSON object
    each output line starts from."""
    if args.text is not None:
        check_pairs(card, args.text_b is not None, "--text", args.checkpoint_path)
        row = {"text": args.text, **({"text_b": args.text_b} if args.text_b is not None else {})}
        return [data.Example(0, 0, args.text, args.text_b, None)], [row]
    try:
        columns = input_columns(args, card)
        examples = data.read_examples(args.input, columns, labelled=False)
    except (data.ClassificationDataError, FileNotFoundError) as e:
        raise FlagError(str(e)) from None
    except UnicodeDecodeError as e:
        raise FlagError(f"--input {args.input} is not UTF-8 text (byte {e.start}: "
                        f"{e.reason})") from None
    check_pairs(card, columns.text_b is not None, f"--input {args.input}", args.checkpoint_path)
    if data.file_format(args.input) == "jsonl":
        with open(args.input, encoding="utf-8-sig") as f:
            lines = f.readlines()
        rows = [json.loads(lines[e.line - 1]) for e in examples]
    else:
        rows = [{"index": e.index, "text": e.text_a,
                 **({"text_b": e.text_b} if e.text_b is not None else {})} for e in examples]
    return examples, rows


def recorded_outputs(path: str) -> tuple[int | None, list[str] | None]:
    """What the model's own config.json says of its outputs, read without TensorFlow: (their
    number, their label names in id order). None where it does not say: a trainer checkpoint's
    config.json (the run record names its labels), an export that predates id2label in a
    SavedModel's assets, a config.json that is not readable (loading the model says why)."""
    directory = path if os.path.isdir(path) else os.path.dirname(os.path.abspath(path))
    if os.path.isfile(os.path.join(directory, "saved_model.pb")):
        directory = os.path.join(directory, "assets")
    try:
        with open(os.path.join(directory, "config.json"), encoding="utf-8") as f:
            config = json.load(f)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return None, None
    id2label = config.get("id2label") if isinstance(config, dict) else None
    if not isinstance(id2label, dict) or not id2label:
        return None, None
    if config.get("problem_type") == "regression":
        return 1, None
    names = [id2label.get(str(i)) for i in range(len(id2label))]
    if not all(isinstance(name, str) for name in names):
        return None, None
    # transformers' placeholder names (LABEL_0, ...): the number of outputs, no names.
    if names == [f"LABEL_{i}" for i in range(len(names))]:
        return len(names), None
    return len(names), names


def check_card_against_model(card: dict | None, path: str) -> None:
    """Refuse a task card that disagrees with the model's own config.json: its labels in
    another order would flip every predicted label, another number of them would name the
    outputs wrongly. A card copied from another model, or edited, is caught here, before
    TensorFlow."""
    if not card:
        return
    outputs, names = recorded_outputs(path)
    if outputs is None:
        return
    model, task, labels = f"--checkpoint_path {path}", card.get("task"), card.get("labels")
    if task == "regression" and outputs != 1:
        raise FlagError(f"{model}: its task card says regression but its config.json names "
                        f"{outputs} labels: the card does not belong to this model")
    if task == "classification" and outputs == 1:
        raise FlagError(f"{model}: its task card says classification but its config.json has "
                        "one output (regression): the card does not belong to this model")
    if not labels:
        return
    if len(labels) != outputs:
        raise FlagError(f"{model}: its task card names {len(labels)} labels but its "
                        f"config.json (id2label) {outputs}: the card does not belong to this "
                        "model")
    if names is not None and list(labels) != names:
        raise FlagError(f"{model}: its task card's labels {','.join(labels)} (in id order) "
                        f"are not its config.json's id2label {','.join(names)}: the card does "
                        "not belong to this model (restore the one its export wrote)")


def prepare(args):
    """(card, examples, rows, spm_model or None) after every check that needs no TensorFlow:
    the flags, the model's task card against them and against the model's config.json, the
    vocabulary, the inputs."""
    check_args(args)
    model = args.checkpoint_path
    card = read_card(model)
    task = (card or {}).get("task")
    if task not in (None, "classification", "regression"):
        hint = " (ask it with python -m albert.answer)" if task == "squad" else ""
        raise FlagError(f"--checkpoint_path {model} was fine-tuned for {task}, not "
                        f"classification{hint}")
    check_card_against_model(card, model)
    args.max_seq_length = settle({"max_seq_length": args.max_seq_length}, card,
                                 FEATURE_DEFAULTS, model)["max_seq_length"]
    spm_model = args.spm_model or vocabulary_file(model)
    if spm_model:
        check_vocabulary_content(card, spm_model, model)
    examples, rows = read_inputs(args, card)
    return card, examples, rows, spm_model


# -- the model ------------------------------------------------------------------------------------


def output_labels(card: dict | None, outputs: int | None, names, model: str):
    """The label names in id order (None: a regression model), from the card, else the model's
    id2label, else the ids themselves."""
    card = card or {}
    if card.get("task") == "regression" or outputs == 1:
        if card.get("task") == "classification":
            raise CheckpointError(f"--checkpoint_path {model} has one output, but its task card "
                                  "says classification")
        return None
    labels = card.get("labels") or (list(names) if names else None)
    if labels is None:
        if outputs is None:
            raise CheckpointError(f"--checkpoint_path {model} names neither its labels nor their "
                                  "number")
        logger.warning("--checkpoint_path %s does not name its labels: its %d output ids are "
                       "printed", model, outputs)
        return [str(i) for i in range(outputs)]
    if outputs is not None and len(labels) != outputs:
        raise CheckpointError(f"--checkpoint_path {model} has {outputs} outputs but its task card "
                              f"names {len(labels)} labels")
    return list(labels)


# -- classifying ----------------------------------------------------------------------------------


def classify_all(examples, logits_fn, tokenizer, args):
    """float32 [N, outputs] logits of every example, in input order."""
    features, stats = data.featurize(examples, None, tokenizer, args.max_seq_length)
    if stats["truncated"]:
        logger.info("%d of %d inputs cut to --max_seq_length %d", stats["truncated"],
                    stats["examples"], args.max_seq_length)
    out = []
    quiet = args.no_progress or args.input is None
    with tqdm(total=len(features), unit="text", disable=quiet, file=sys.stderr) as bar:
        for first in range(0, len(features), args.batch_size):
            batch = features[first:first + args.batch_size]
            longest = max(len(f.input_ids) for f in batch)
            length = min(-(-longest // PAD_TO_MULTIPLE_OF) * PAD_TO_MULTIPLE_OF,
                         args.max_seq_length)
            arrays = {name: np.zeros([len(batch), length], np.int32) for name in MODEL_INPUTS}
            for i, f in enumerate(batch):
                n = len(f.input_ids)
                arrays["input_ids"][i, :n] = f.input_ids
                arrays["attention_mask"][i, :n] = 1
                arrays["token_type_ids"][i, :n] = f.token_type_ids
            out.append(np.asarray(logits_fn(**arrays), np.float32))
            bar.update(len(batch))
    return np.concatenate(out)


def softmax(logits):
    shifted = np.asarray(logits, np.float64)
    shifted = shifted - shifted.max(axis=-1, keepdims=True)
    e = np.exp(shifted)
    return e / e.sum(axis=-1, keepdims=True)


def result_rows(rows: list[dict], logits, labels) -> list[dict]:
    if labels is None:
        return [{**row, "score": float(value)} for row, value in zip(rows, logits[:, 0],
                                                                       strict=True)]
    out = []
    for row, p in zip(rows, softmax(logits), strict=True):
        out.append({**row, "label": labels[int(p.argmax())],
                    "probabilities": {name: float(x) for name, x in zip(labels, p, strict=True)}})
    return out


def run(args, card, examples, rows, spm_model) -> int:
    # TensorFlow and the model only once the flags, the task card and the inputs are checked
    # (prepare): a bad flag or input is answered in a second.
    from albert.cli.serving_model import load_classifier

    logits_fn, config, outputs, names = load_classifier(args.checkpoint_path, card)
    labels = output_labels(card, outputs, names, args.checkpoint_path)
    if not spm_model:
        raise FlagError(f"no vocabulary comes with --checkpoint_path {args.checkpoint_path} "
                        "(spiece.model or 30k-clean.model); pass --spm_model")
    check_vocabulary_content(card, spm_model, args.checkpoint_path)
    if args.max_seq_length > config.max_position_embeddings:
        raise FlagError(f"--max_seq_length {args.max_seq_length} exceeds the model's "
                        f"max_position_embeddings ({config.max_position_embeddings})")
    tokenizer = load_tokenizer(spm_model)
    if len(tokenizer) != config.vocab_size:
        raise FlagError(f"the vocabulary {spm_model} has {len(tokenizer)} pieces but the "
                        f"model's vocab_size is {config.vocab_size}")
    if card:
        logger.info("features as fine-tuned: --max_seq_length %d", args.max_seq_length)
    logits = classify_all(examples, logits_fn, tokenizer, args)
    if labels is not None and logits.shape[1] != len(labels):
        raise FlagError(f"--checkpoint_path {args.checkpoint_path} returned {logits.shape[1]} "
                        f"logits for {len(labels)} labels")
    results = result_rows(rows, logits, labels)
    write_jsonl(results, args.output)
    if args.output:
        if labels is None:
            summary = "scored"
        else:
            counts = {name: 0 for name in labels}
            for r in results:
                counts[r["label"]] += 1
            summary = "classified ({})".format(", ".join(f"{k} {v}" for k, v in counts.items()))
        print(f"{summary} {len(results)} input(s); wrote {args.output}", file=sys.stderr)
    return 0


def main(argv=None) -> int:
    return run_main(parse_args, lambda args, prepared: run(args, *prepared), argv,
                    prepare=prepare)


if __name__ == "__main__":
    sys.exit(main())
