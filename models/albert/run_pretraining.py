"""Pretrain ALBERT (MLM + sentence-order prediction) on TFRecords; one process or many.

    python -m albert.run_pretraining --train_dir data/train --model_size base \\
        --spm_model vocab/spiece.model --max_seq_length 512 --per_gpu_batch_size 32 \\
        --total_steps 125000 --warmup_steps 3125 --learning_rate 0.00176 --precision bf16
    horovodrun -np 8 python -m albert.run_pretraining ...       # same flags, 8 processes

Resumes from the latest checkpoint in --checkpoint_dir when the run there was started the same way
(a restarted spot job continues where it stopped, reading on from each rank's saved input
position); a different start is refused. At the end the model is exported in Hugging Face format to
<checkpoint_dir>/final (with the vocabulary), ready for run_squad --load_from pretrained.
"""

from __future__ import annotations

import argparse
import re
import sys

from albert import run_squad
from albert.cli.flags import Parser, add_model_flags, add_training_flags, as_flags, run_main
from albert.cli.resolve import check_training_flags, plan_ranks, resolve_spec
from albert.data.squad import SquadError, read_squad
from albert.errors import FlagError, SettingError
from albert.tasks.pretraining_options import (
    SQUAD_FLAGS,
    PretrainingDeclaration,
    PretrainingOptions,
    squad_command,
)
from albert.train.memory import print_plan
from albert.train.run_spec import Data, check_fits, model_config


def build_parser() -> Parser:
    p = Parser(description=__doc__.split("\n\n")[0])
    g = p.add_argument_group("data")
    g.add_argument("--train_dir", default="data/train",
                   help="TFRecord directory, glob or comma list, under --filesystem_prefix")
    g.add_argument("--val_dir", default=None, help="validation TFRecords (optional)")
    g.add_argument("--max_seq_length", type=int, default=512)
    g.add_argument("--max_predictions_per_seq", type=int, default=20)
    g.add_argument("--shuffle_buffer", type=int, default=10_000, help="0: no shuffling")
    g.add_argument("--skip_corrupt_records", action="store_true",
                   help="read each damaged TFRecord file up to its first bad record (counted in "
                        "a warning at start) instead of stopping; `python -m albert.check_records` "
                        "lists damaged files")
    g.add_argument("--validation_frequency", "--eval_frequency", type=int, default=0,
                   help="validate every N steps (and at the end) when --val_dir is set")
    g = p.add_argument_group("SQuAD during pretraining (as aws-samples' --squad_frequency)")
    g.add_argument("--squad_frequency", type=int, default=0,
                   help="every N steps (and at the end), fine-tune a copy briefly on "
                        "--squad_train_file and log dev EM/F1 under squad/ (0: off)")
    g.add_argument("--squad_train_file", default=None,
                   help="SQuAD JSON to fine-tune on (required with --squad_frequency)")
    g.add_argument("--squad_predict_file", default=None,
                   help="SQuAD JSON to score (required with --squad_frequency)")
    g.add_argument("--squad_steps", type=int, default=300)
    g.add_argument("--squad_max_seq_length", type=int, default=384)
    g.add_argument("--squad_batch_size", type=int, default=16)
    g.add_argument("--squad_learning_rate", type=float, default=5e-5)
    add_model_flags(p)
    add_training_flags(p, learning_rate=0.00176, batch=32, optimizer="lamb",
                       run_name="pretraining")
    return p


def parse_args(argv=None, parser=None):
    """The flags of argv, checked. `parser`: build_parser()'s unless given (the SageMaker
    launcher gives one that raises FlagError instead of exiting)."""
    p = parser or build_parser()
    # argparse fills in a default only where the namespace has no value yet: a --squad_* flag
    # still holding NOT_GIVEN was not on the command line (whatever value it would have had).
    args = p.parse_args(argv, argparse.Namespace(**{ours[2:]: NOT_GIVEN for ours in SQUAD_FLAGS}))
    given = [ours for ours in SQUAD_FLAGS if getattr(args, ours[2:]) is not NOT_GIVEN]
    for ours in SQUAD_FLAGS:
        if getattr(args, ours[2:]) is NOT_GIVEN:
            setattr(args, ours[2:], p.get_default(ours[2:]))
    if args.total_steps is None:
        p.error("--total_steps is required")
    if args.squad_frequency < 0:
        p.error(f"--squad_frequency must be at least 0 (0: no SQuAD during pretraining), got "
                f"{args.squad_frequency}")
    if given and not args.squad_frequency:
        p.error(f"{', '.join(given)} {'is' if len(given) == 1 else 'are'} for SQuAD during "
                "pretraining, which is off without --squad_frequency N (every N updates): add "
                "it, or leave out the --squad_* flags")
    if args.squad_frequency:
        missing = [flag for flag, value in (("--squad_train_file", args.squad_train_file),
                                            ("--squad_predict_file", args.squad_predict_file),
                                            ("--spm_model", args.spm_model)) if not value]
        if missing:
            p.error(f"--squad_frequency {args.squad_frequency} needs {' and '.join(missing)}")
    return args


def resolve(args):
    """The run spec of these flags (albert.train.run_spec.RunSpec)."""
    check_training_flags(args)
    squad = {ours[2:]: getattr(args, ours[2:]) for ours in SQUAD_FLAGS} \
        if args.squad_frequency else {}
    options = PretrainingOptions(
        **{name: getattr(args, name) for name in (
            "max_seq_length", "max_predictions_per_seq", "shuffle_buffer", "filesystem_prefix",
            "skip_corrupt_records", "validation_frequency", "squad_frequency")}, **squad)
    spec = resolve_spec(args, PretrainingDeclaration.spec_task(options), options=options,
                        data=Data(train=args.train_dir, val=args.val_dir))
    if squad and not args.plan_only:
        check_squad(spec)
    return spec


NOT_GIVEN = object()


def check_squad(spec) -> None:
    """--squad_frequency's SQuAD runs, checked before any pretraining: the first one's command
    line (albert.tasks.pretraining_options.squad_command) parsed and resolved by run_squad as it
    would be, and its files read. Everything that would fail each evaluation is refused now, by its
    --squad_* name: a value run_squad refuses, windows that leave no room for context or that
    this run's model has no positions for, files that are not SQuAD JSON (or hold no
    questions)."""
    o = spec.options
    try:
        parser = run_squad.build_parser()
        parser.exit_on_error = False  # a FlagError, named below as run_pretraining takes it
        run_squad.resolve(run_squad.parse_args(squad_command(spec, o.squad_frequency), parser))
        for flag in ("--squad_train_file", "--squad_predict_file"):
            path = getattr(o, flag[2:])
            try:
                questions = len(read_squad(path)[0])
            except SquadError as e:
                raise FlagError(f"{flag} {e}") from None
            if not questions:
                raise FlagError(f"{flag} {path} holds no questions")
        if not spec.model.pretrained:
            # The model built from these flags (or its checkpoint, which must match them): every
            # evaluation would find the SQuAD windows too long for its positions. A released
            # model's positions are known when the run loads it.
            check_fits(model_config(spec.model, spec.vocabulary), o.squad_max_seq_length)
    except SettingError as e:  # run_squad's FlagError, or the library's (check_fits, windows)
        raise FlagError(f"--squad_frequency's SQuAD run: {squad_names(as_flags(e))}") from None


def squad_names(message: str) -> str:
    """run_squad's message about the SQuAD run, its flags named as run_pretraining takes them;
    a run_squad flag that run_pretraining does not take keeps run_squad's default, said so."""
    for ours, theirs in SQUAD_FLAGS.items():
        message = re.sub(rf"(?<![\w-]){theirs}\b", ours, message)
    fixed = sorted({flag for flag in re.findall(r"(?<![\w-])--\w+", message)
                    if not flag.startswith("--squad_")})
    if fixed:
        message += (f" ({', '.join(fixed)}: run_squad's default, which SQuAD during pretraining "
                    "keeps)")
    return message


def run(args) -> int:
    """Pretrain; with --plan_only, print the plan instead."""
    spec = resolve(args)
    if spec.plan_only:
        return print_plan(spec, plan_ranks(args), head=PretrainingDeclaration.name)
    # The runner and the task compute (TensorFlow): --help, a bad flag and --plan_only run
    # without them.
    from albert.tasks import pretraining, runner

    return runner.run(pretraining.PretrainingTask, spec)


def main(argv=None) -> int:
    return run_main(parse_args, run, argv)


if __name__ == "__main__":
    sys.exit(main())
