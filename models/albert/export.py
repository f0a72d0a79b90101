"""Export an ALBERT model as a TensorFlow SavedModel that a server loads without this package.

    python -m albert.export --checkpoint_path runs/squad/checkpoints --head squad \\
        --output_dir serving/1

--checkpoint_path takes a trainer checkpoint (a prefix, or a directory whose latest checkpoint is
used, with config.json beside it), a Hugging Face directory or a Google ALBERT directory. The
SavedModel's `serving_default` signature takes int32 `input_ids`, `attention_mask` and
`token_type_ids` of shape [batch, seq] (both dynamic, seq up to max_position_embeddings) and
returns float32 `start_logits`, `end_logits` [batch, seq] (--head squad), `logits`
[batch, num_labels] (--head classification: a sequence classifier, or a regression model with
one output) or `mlm_logits` [batch, seq, vocab], `sop_logits` [batch, 2] (--head pretraining).
The vocabulary and the model config travel with it as assets/spiece.model and
assets/config.json, and a fine-tuned model's task card (the windows, labels in id order and
vocabulary checksum it was fine-tuned with) as assets/albert_task.json. This module is the
command; the export itself is albert.io.savedmodel's, its output-directory checks
albert.io.export_dir's.
"""

from __future__ import annotations

import os
import sys

from albert.cli.flags import Parser, Renamed, run_main
from albert.data.tokenization import load_spm
from albert.errors import CheckpointError, FlagError
from albert.io.export_dir import check_output_dir
from albert.io.model_dir import vocabulary_file
from albert.io.task_card import read_task_card
from albert.io.weights import check_vocabulary
from albert.model.heads import OLD_NAMES, TASKS, task_name
from albert.train.run_spec import file_sha256


def build_parser() -> Parser:
    p = Parser(description=__doc__.split("\n\n")[0])
    p.add_argument("--checkpoint_path", required=True,
                   help="trainer checkpoint (prefix or directory), Hugging Face or Google "
                        "ALBERT directory")
    # --task: the old spelling (run_classifier's --task is classification or regression); the
    # old spellings of the values (qa for squad) are read too.
    p.add_argument("--head", action=Renamed, old=("--task",), old_values=OLD_NAMES,
                   choices=sorted(TASKS),
                   required=True, help="the model's head, and the outputs its signature returns")
    p.add_argument("--output_dir", required=True,
                   help="where the SavedModel goes, e.g. serving/1 (TF Serving's version dir)")
    p.add_argument("--spm_model", default=None,
                   help="SentencePiece vocabulary (default: the one beside the checkpoint)")
    p.add_argument("--overwrite", action="store_true",
                   help="replace a non-empty --output_dir that holds no SavedModel (never one "
                        "that holds a run, a checkpoint or the model being exported)")
    return p


def parse_args(argv=None):
    return build_parser().parse_args(argv)


def prepare(args) -> str:
    """The checks that need no TensorFlow, before it is imported: what --checkpoint_path stands
    for (a prefix, runs/x/ckpt-7, for its directory, where config.json and the run live)."""
    path = args.checkpoint_path
    if not os.path.exists(path) and not os.path.exists(path + ".index"):
        raise FlagError(f"--checkpoint_path {path} does not exist")
    source = path if os.path.exists(path) else os.path.dirname(os.path.abspath(path))
    check_output_dir(args.output_dir, overwrite=args.overwrite, protect=[source])
    return source


def run(args, source: str | None = None) -> int:
    # TensorFlow (the loading and the export) only once prepare has checked the flags: --help
    # and a bad --output_dir are answered without it.
    from albert.io import pretrained, savedmodel

    path = args.checkpoint_path
    if source is None:
        source = prepare(args)
    spm_model = args.spm_model or vocabulary_file(path)
    if not spm_model:
        raise CheckpointError(f"no vocabulary beside {path} (spiece.model or 30k-clean.model); "
                              "pass --spm_model")
    if not os.path.isfile(spm_model):
        raise FileNotFoundError(f"--spm_model {spm_model} does not exist")
    pieces = load_spm(spm_model).GetPieceSize()
    card = read_task_card(path)
    trained = (card or {}).get("task")
    if task_name(trained) in TASKS and task_name(trained) != args.head:
        raise FlagError(f"--head {args.head}: {path} was fine-tuned for {trained}; export it "
                        f"with --head {task_name(trained)}")
    options = {}
    if args.head == "classification" and card:
        # The run's labels in id order name the outputs (a trainer checkpoint holds no
        # id2label); a regression run has one output.
        labels = card.get("labels")
        options = ({"num_labels": 1} if trained == "regression" else
                   {"num_labels": len(labels), "label_names": list(labels)} if labels else {})
    model = pretrained.load_model(savedmodel.model_class(args.head), path, **options)
    # A server would take this vocabulary's ids as the model's: valid ids, wrong tokens.
    check_vocabulary(model.config, pieces, spm_model)
    if card and card.get("vocabulary_sha256") and args.spm_model \
            and file_sha256(spm_model) != card["vocabulary_sha256"]:
        raise FlagError(f"--spm_model {spm_model} is not the vocabulary {path} was fine-tuned "
                        "with (its content differs): drop --spm_model to export the one beside "
                        "the checkpoint")
    out = savedmodel.export_saved_model(model, args.output_dir, args.head, spm_model=spm_model,
                                        overwrite=args.overwrite, protect=[source], card=card)
    print(f"exported {args.head} SavedModel to {out} (signature serving_default: "
          f"{', '.join(TASKS[args.head].outputs)})", flush=True)
    return 0


def main(argv=None) -> int:
    return run_main(parse_args, run, argv, prepare=prepare)


if __name__ == "__main__":
    sys.exit(main())
