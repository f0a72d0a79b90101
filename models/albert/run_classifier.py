"""Fine-tune ALBERT to classify sentences or sentence pairs (or score them: regression), GLUE-style.

    python -m albert.run_classifier --train_file train.tsv --eval_file dev.tsv \\
        --test_file test.tsv --load_from pretrained --checkpoint_path albert_base \\
        --text_a sentence1 --text_b sentence2 --label label --per_gpu_batch_size 32
    python -m albert.run_classifier --glue_task mnli --train_file MNLI/train.tsv \\
        --eval_file MNLI/dev_matched.tsv ...        # GLUE's columns, labels and metric
    horovodrun -np 8 python -m albert.run_classifier ...    # same flags

Inputs are TSV, CSV (columns given by the header's names or by 0-based positions; --no_header:
positions only) or JSON lines (see albert.data.classification). The labels are --labels, the
--glue_task's, or those of the training file, sorted; --task regression fits one number per
example instead.

Training features are sharded by rank and padded per batch to the batch's longest sequence.
Evaluation and prediction are split across ranks and gathered on rank 0, which scores every
prediction at once (accuracy, MCC and for two classes F1; Pearson / Spearman for regression),
logs the scores to stdout, the JSON-lines log and TensorBoard (`eval/`), and writes
eval_results.json, eval_predictions.tsv and (--test_file) predictions.tsv to --output_dir.

Without --train_file the run only evaluates and predicts, with every weight (the classifier
included) from --checkpoint_path (--load_from checkpoint: a run_classifier checkpoint directory
or prefix; --load_from pretrained: an exported classifier); a checkpoint without a classifier, or
--load_from scratch, is refused rather than scored.
"""

from __future__ import annotations

import sys

from albert.cli.flags import (
    FlagError,
    Parser,
    Renamed,
    add_export_flag,
    add_fine_tuning_flags,
    add_model_flags,
    add_training_flags,
    run_main,
)
from albert.cli.resolve import (
    check_fine_tuning,
    check_training_flags,
    column_flag,
    plan_ranks,
    resolve_paths,
    resolve_spec,
    settle_features,
)
from albert.data.classification import GLUE_TASKS, TASKS, Columns
from albert.tasks import default_rate_help
from albert.tasks.classifier_options import (
    FEATURES,
    REPORTED,
    ClassifierDeclaration,
    ClassifierOptions,
)
from albert.train.memory import print_plan
from albert.train.run_spec import Data


def build_parser() -> Parser:
    p = Parser(description=__doc__.split("\n\n")[0])
    g = p.add_argument_group("classification")
    g.add_argument("--train_file", default=None, help="labelled TSV / CSV / JSONL to fine-tune on")
    g.add_argument("--eval_file", default=None, help="labelled file to score")
    # Google's run_squad scores its --predict_file; here that file is --eval_file.
    g.add_argument("--test_file", action=Renamed, old=("--predict_file",), default=None,
                   help="file to predict (labels not needed, as GLUE's test.tsv): "
                        "predictions.tsv in --output_dir")
    g.add_argument("--glue_task", choices=sorted(GLUE_TASKS), default=None,
                   help="the GLUE files' columns, labels, task and metric (the column flags "
                        "still override)")
    g.add_argument("--task", choices=TASKS, default=None,
                   help="default: the --glue_task's, else classification (regression for a "
                        "fine-tuned model with one output)")
    g.add_argument("--text_a", default=None,
                   help="column of the (first) text: a header name or a 0-based position (default "
                        "sentence)")
    g.add_argument("--text_b", default=None, help="column of the second text of a pair")
    g.add_argument("--label", default=None, help="column of the label (default label)")
    g.add_argument("--no_header", action="store_true",
                   help="TSV/CSV files without a header row: columns are 0-based positions")
    g.add_argument("--labels", default=None,
                   help="comma-separated label set, in id order (default: the --glue_task's, "
                        "else the training file's labels sorted, else the fine-tuned model's)")
    g.add_argument("--max_seq_length", type=int, default=None,
                   help=f"default {FEATURES['max_seq_length']}; evaluating a fine-tuned model, "
                        "the one it was fine-tuned with (another value is refused)")
    g.add_argument("--padding", choices=("batch", "max"), default="batch",
                   help="batch: pad each batch to its longest sequence (rounded up to "
                        "--pad_to_multiple_of); max: always to --max_seq_length")
    g.add_argument("--pad_to_multiple_of", type=int, default=8,
                   help="round a batch's padded length up to a multiple of this (1: exactly its "
                        "longest): fewer shapes for XLA to compile")
    add_fine_tuning_flags(g, run_name="classifier", epochs=3.0, scored="--eval_file")
    add_export_flag(g, ask="python -m albert.classify")
    add_model_flags(p)
    add_training_flags(p, learning_rate=None, batch=32, optimizer="adamw", run_name="classifier",
                       under_output_dir=True,
                       learning_rate_help=default_rate_help(ClassifierDeclaration))
    p.set_defaults(warmup_steps=None, log_frequency=50)
    return p


def parse_args(argv=None, parser=None):
    """The flags of argv, checked. `parser`: build_parser()'s unless given (the SageMaker
    launcher gives one that raises FlagError instead of exiting)."""
    p = parser or build_parser()
    args = resolve_paths(p.parse_args(argv))
    if not (args.train_file or args.eval_file or args.test_file):
        p.error("give --train_file, --eval_file, --test_file, or several")
    return args


def task_options(args, max_seq_length: int) -> ClassifierOptions:
    """--glue_task, then the column, --task and --labels flags over it: the columns of the
    labelled files and of the file to predict, classification or regression (None: not said),
    labels (None: not known yet) and the metric reported first."""
    preset = GLUE_TASKS.get(args.glue_task)
    if preset and args.task and args.task != preset.task:
        raise FlagError(f"--task {args.task} contradicts --glue_task {args.glue_task} "
                        f"({preset.task})")
    base = preset.columns if preset else Columns("sentence", None, "label")
    header = base.header and not args.no_header
    own_columns = any(v is not None for v in (args.text_a, args.text_b, args.label))
    columns = Columns(
        column_flag(args.text_a if args.text_a is not None else base.text_a, header, "--text_a"),
        column_flag(args.text_b if args.text_b is not None else base.text_b, header, "--text_b"),
        column_flag(args.label if args.label is not None else base.label, header, "--label"),
        header)
    predict_columns = columns
    if preset and preset.predict_columns and not own_columns and not args.no_header:
        predict_columns = preset.predict_columns
    task = args.task or (preset.task if preset else None)
    labels = preset.labels if preset else None
    labels_flag = f"--glue_task {args.glue_task}'s labels {','.join(labels)}" if labels else None
    if args.labels is not None:
        labels = tuple(x.strip() for x in args.labels.split(",") if x.strip())
        if len(set(labels)) != len(labels) or len(labels) < 2:
            raise FlagError(f"--labels needs two or more distinct labels, got {args.labels!r}")
        if task == "regression":
            raise FlagError("--labels is for classification, not --task regression")
        labels_flag = f"--labels {args.labels}"
    return ClassifierOptions(
        max_seq_length=max_seq_length, columns=columns, predict_columns=predict_columns,
        kind=task, labels=labels, labels_flag=labels_flag,
        metric=preset.metric if preset else None, padding=args.padding,
        pad_to_multiple_of=args.pad_to_multiple_of, eval_batch_size=args.eval_batch_size)


def resolve(args):
    """The run spec of these flags (albert.train.run_spec.RunSpec), checked as far as it can be
    without TensorFlow: counts and directories, files that must exist, the feature settings
    (the model's own for an evaluation-only run), the task, the vocabulary, --keep_best and
    --export_dir."""
    check_training_flags(args)
    features = settle_features(args, FEATURES)
    if args.pad_to_multiple_of < 1:
        raise FlagError(f"--pad_to_multiple_of must be at least 1, got {args.pad_to_multiple_of}")
    options = task_options(args, features["max_seq_length"])
    spec = resolve_spec(
        args, ClassifierDeclaration.spec_task(options), options=options,
        data=Data(train=args.train_file, eval=args.eval_file, predict=args.test_file))
    if args.plan_only:
        return spec
    return check_fine_tuning(args, spec, files=("train_file", "eval_file", "test_file"),
                             scored_by="eval_file", reported=REPORTED,
                             without_training="evaluation or prediction",
                             tool="run_classifier", model_kind="classifier")


def run(args) -> int:
    """Train (with --train_file), then evaluate (--eval_file) and predict (--test_file); with
    --plan_only, print the plan instead."""
    spec = resolve(args)
    if spec.plan_only:
        return print_plan(spec, plan_ranks(args), head=ClassifierDeclaration.name)
    # The runner and the task compute (TensorFlow): --help, a bad flag and --plan_only run
    # without them.
    from albert.tasks import classification, runner

    return runner.run(classification.ClassifierTask, spec)


def main(argv=None) -> int:
    return run_main(parse_args, run, argv)


if __name__ == "__main__":
    sys.exit(main())
