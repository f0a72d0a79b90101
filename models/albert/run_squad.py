"""Fine-tune ALBERT on SQuAD v1.1 / v2.0 and score it with the official rules.

    python -m albert.run_squad --train_file train-v2.0.json --predict_file dev-v2.0.json \\
        --load_from pretrained --checkpoint_path runs/pretraining/checkpoints/final \\
        --per_gpu_batch_size 24 --learning_rate 3e-5 --num_train_epochs 2
    horovodrun -np 8 python -m albert.run_squad ...    # same flags

Training features are sharded by rank; prediction is split across ranks and gathered on rank 0,
which writes predictions.json, nbest_predictions.json and (v2) null_odds.json to --output_dir and
logs exact/F1 (with HasAns/NoAns and the best no-answer threshold for v2) to stdout, the JSON-lines
log and TensorBoard. Features are cached under --cache_dir, keyed by file, vocabulary and settings.

Without --train_file the run only predicts, with every weight (the QA head included) from
--checkpoint_path (--load_from checkpoint: a run_squad checkpoint directory or prefix; --load_from
pretrained: an exported QA model); a checkpoint without a QA head, or --load_from scratch, is
refused rather than scored.
"""

from __future__ import annotations

import sys

from albert.cli.flags import (
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
    plan_ranks,
    resolve_paths,
    resolve_spec,
    settle_features,
)
from albert.data.squad import FeatureSettings
from albert.tasks import default_rate_help
from albert.tasks.squad_options import (
    REPORTED,
    VERSIONS,
    WINDOWS,
    SquadDeclaration,
    SquadOptions,
)
from albert.train.memory import print_plan
from albert.train.run_spec import Data


def build_parser() -> Parser:
    p = Parser(description=__doc__.split("\n\n")[0])
    g = p.add_argument_group("SQuAD")
    g.add_argument("--train_file", default=None, help="SQuAD JSON to fine-tune on")
    g.add_argument("--predict_file", default=None, help="SQuAD JSON to predict and score")
    g.add_argument("--squad_version", action=Renamed,
                   old_values={v: k for k, v in VERSIONS.items()}, choices=tuple(VERSIONS),
                   default=None,
                   help="default: read from the files' version field (v1.1 and v2.0, their "
                        "spelling, read as squadv1 and squadv2)")
    for name, default in WINDOWS.items():
        g.add_argument(f"--{name}", type=int, default=None,
                       help=f"default {default}; predicting with a fine-tuned model, the one it "
                            "was fine-tuned with (another value is refused)")
    g.add_argument("--padding", choices=("batch", "max"), default="batch",
                   help="batch: windows of similar length batched together and padded to their "
                        "length bucket (a multiple of 64; the same predictions, less padding to "
                        "compute); max: every window padded to --max_seq_length")
    g.add_argument("--n_best_size", type=int, default=20)
    g.add_argument("--max_answer_length", type=int, default=30)
    g.add_argument("--null_score_diff_threshold", type=float, default=0.0)
    add_fine_tuning_flags(g, run_name="squad", epochs=2.0, scored="--predict_file")
    add_export_flag(g, ask="python -m albert.answer")
    add_model_flags(p)
    add_training_flags(p, learning_rate=None, batch=24, optimizer="adamw", run_name="squad",
                       under_output_dir=True,
                       learning_rate_help=default_rate_help(SquadDeclaration))
    p.set_defaults(warmup_steps=None, log_frequency=50)
    return p


def parse_args(argv=None, parser=None):
    """The flags of argv, checked. `parser`: build_parser()'s unless given (the SageMaker
    launcher gives one that raises FlagError instead of exiting)."""
    p = parser or build_parser()
    args = resolve_paths(p.parse_args(argv))
    if not args.train_file and not args.predict_file:
        p.error("give --train_file, --predict_file or both")
    return args


def resolve(args):
    """The run spec of these flags (albert.train.run_spec.RunSpec), checked as far as it can be
    without TensorFlow: counts and directories, files that must exist, the windows (the
    model's own for an evaluation-only run; room for context after the question), the
    vocabulary, --keep_best and --export_dir."""
    check_training_flags(args)
    windows = settle_features(args, WINDOWS)
    options = SquadOptions(
        **windows, padding=args.padding,
        squad_version=VERSIONS.get(args.squad_version),
        version_flag=VERSIONS.get(args.squad_version), n_best_size=args.n_best_size,
        max_answer_length=args.max_answer_length,
        null_score_diff_threshold=args.null_score_diff_threshold,
        eval_batch_size=args.eval_batch_size)
    spec = resolve_spec(args, SquadDeclaration.spec_task(options), options=options,
                        data=Data(train=args.train_file, predict=args.predict_file))
    if args.plan_only:
        return spec
    FeatureSettings(**windows)  # refuses windows that leave no room, before reading any file
    return check_fine_tuning(args, spec, files=("train_file", "predict_file"),
                             scored_by="predict_file", reported=REPORTED,
                             without_training="prediction", tool="run_squad",
                             model_kind="QA model")


def run(args) -> int:
    """Train (with --train_file), then predict and score (with --predict_file); with --plan_only,
    print the plan instead."""
    spec = resolve(args)
    if spec.plan_only:
        return print_plan(spec, plan_ranks(args), head=SquadDeclaration.name)
    # The runner and the task compute (TensorFlow): --help, a bad flag and --plan_only run
    # without them.
    from albert.tasks import runner, squad

    return runner.run(squad.SquadTask, spec)


def main(argv=None) -> int:
    return run_main(parse_args, run, argv)


if __name__ == "__main__":
    sys.exit(main())
