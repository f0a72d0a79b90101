"""Resolving a runner's parsed flags: their checks (counts, frequencies, directories, batch and
memory flags), the paths a fine-tuner's files take, the feature settings an evaluation-only run
takes from its model, and resolve_spec, the one place where flags become the run spec
(albert.train.run_spec.RunSpec) that everything below the command-line tools takes. Pure
functions of the parsed flags (and the files they name): they return what they resolve and
never write onto the flags. Unit-tested in-process; albert.cli.flags holds the argparse groups
themselves."""

from __future__ import annotations

import argparse
import functools
import math
import os

from albert.cli.flags import in_flags
from albert.errors import FlagError
from albert.io.export_dir import check_export_dir
from albert.io.model_dir import vocabulary_file
from albert.io.task_card import read_task_card
from albert.train.distributed import launched_by_horovod
from albert.train.memory import check_batching
from albert.train.run_spec import (
    Batching,
    Data,
    Execution,
    ModelSource,
    Optimization,
    Outputs,
    RunSpec,
    TaskOptions,
    settle,
)


def column_flag(value, header: bool, flag: str):
    """A column flag's value (--text_a, --text_b, --label): a name, or with --no_header a
    0-based position."""
    if value is None or header or isinstance(value, int):
        return value
    try:
        position = int(value)
    except ValueError:
        raise FlagError(f"{flag} must be a column position (0, 1, ...) with --no_header, got "
                        f"{value!r}") from None
    if position < 0:
        raise FlagError(f"{flag} must be a column position (0, 1, ...), got {position}")
    return position


def resolve_paths(args) -> argparse.Namespace:
    """A fine-tuner's flags with its paths resolved (a new Namespace; `args` is left as parsed).
    Relative input files are under --filesystem_prefix, as run_pretraining's --train_dir is (the
    SageMaker launcher sets it to the FSx channel, and a user names data files relative to the
    file system). The directories not given live under --output_dir; and --overwrite_output_dir
    discards the run there as --overwrite_checkpoint_dir does."""
    resolved = {}
    prefix = getattr(args, "filesystem_prefix", ".")
    if prefix and prefix != ".":
        for name in ("train_file", "eval_file", "predict_file", "test_file"):
            path = getattr(args, name, None)
            if path and not os.path.isabs(path):
                resolved[name] = os.path.join(prefix, path)
    for name, sub in (("checkpoint_dir", "checkpoints"), ("log_dir", "logs"),
                      ("cache_dir", "cache")):
        if getattr(args, name, "unset") is None:
            resolved[name] = os.path.join(args.output_dir, sub)
    if getattr(args, "overwrite_output_dir", False):
        checkpoint_dir = resolved.get("checkpoint_dir", args.checkpoint_dir)
        inside = os.path.realpath(checkpoint_dir).startswith(
            os.path.realpath(args.output_dir) + os.sep)
        if not inside and not args.overwrite_checkpoint_dir:
            raise FlagError(f"--overwrite_output_dir discards the run under --output_dir "
                            f"{args.output_dir}; --checkpoint_dir {checkpoint_dir} lies "
                            "elsewhere: add --overwrite_checkpoint_dir to discard that one")
        resolved["overwrite_checkpoint_dir"] = True
    return argparse.Namespace(**{**vars(args), **resolved})


def resolve_spec(args, task: str, *, options: TaskOptions, data: Data):
    """The run spec (albert.train.run_spec.RunSpec) of a runner's parsed flags: the one place where
    flags become the objects the library takes. Pure: reads no file but the vocabulary's bytes
    for its checksum (later, when recorded). `options`, `data`: the task's own settings (its
    albert.tasks options class) and files by role, from the runner's own flags."""
    get = functools.partial(getattr, args)
    load_from = "pretrained" if args.load_from == "huggingface" else args.load_from
    return RunSpec(
        task=task,
        options=options,
        model=ModelSource(load_from=load_from, checkpoint_path=args.checkpoint_path,
                          load_optimizer_state=bool(args.load_optimizer_state),
                          model_size=args.model_size, model_config=args.model_config,
                          config_override=tuple(args.config_override or ()),
                          vocab_size=args.vocab_size),
        vocabulary=args.spm_model,
        data=data,
        total_steps=args.total_steps,
        num_train_epochs=get("num_train_epochs", None),
        optimization=Optimization(
            optimizer=args.optimizer, bias_correction=args.bias_correction == "on",
            learning_rate=args.learning_rate, end_learning_rate=args.end_learning_rate,
            lr_decay=args.lr_decay, decay_power=args.decay_power,
            warmup_steps=args.warmup_steps,
            warmup_proportion=get("warmup_proportion", None) if args.warmup_steps is None
            else None,
            weight_decay=args.weight_decay, max_grad_norm=args.max_grad_norm),
        batching=batching_of(args),
        execution=Execution(precision=args.precision, fp16_allreduce=bool(args.fp16_allreduce),
                            xla="off" if args.skip_xla else args.xla, eager=bool(args.eager),
                            seed=args.seed),
        outputs=Outputs(checkpoint_dir=args.checkpoint_dir,
                        overwrite_checkpoint_dir=bool(args.overwrite_checkpoint_dir),
                        keep_checkpoints=args.keep_checkpoints,
                        checkpoint_frequency=args.checkpoint_frequency, log_dir=args.log_dir,
                        log_frequency=args.log_frequency, progress=not args.no_progress,
                        output_dir=get("output_dir", None), cache_dir=get("cache_dir", None),
                        export_dir=get("export_dir", None),
                        eval_frequency=get("eval_frequency", 0) or 0,
                        keep_best=get("keep_best", None)),
        plan_only=bool(args.plan_only),
        plan_ranks=args.plan_ranks,
    )


def batching_of(args) -> Batching:
    """The batch and memory flags as the spec holds them."""
    return Batching(per_gpu_batch_size=args.per_gpu_batch_size,
                    global_batch_size=args.global_batch_size,
                    gradient_accumulation_steps=args.gradient_accumulation_steps,
                    default_micro_batch=args.default_micro_batch,
                    memory_budget_gb=args.memory_budget_gb, recompute=args.recompute)


def plan_ranks(args) -> int:
    """--plan_only's rank count: --plan_ranks, else the launcher's (horovodrun -np N), else 1."""
    if args.plan_ranks:
        return args.plan_ranks
    return int(os.environ.get("HOROVOD_SIZE", 1)) if launched_by_horovod() else 1


def fine_tuned_path(args) -> str:
    """Where an evaluation-only run takes its fine-tuned weights: --checkpoint_path, or with
    --load_from checkpoint the latest checkpoint in --checkpoint_dir. Checked before loading."""
    if args.load_from in ("pretrained", "huggingface") and not args.checkpoint_path:
        raise FlagError(f"--load_from {args.load_from} needs --checkpoint_path (a local model "
                        "directory)")
    path = args.checkpoint_path or args.checkpoint_dir
    if not args.checkpoint_path and not os.path.isdir(path):
        raise FlagError(f"--load_from checkpoint without --checkpoint_path uses the latest "
                        f"checkpoint in --checkpoint_dir {path}, which does not exist")
    return path


def check_fine_tuning(args, spec: RunSpec, *, files: tuple, scored_by: str, reported: tuple,
                      without_training: str, tool: str, model_kind: str) -> RunSpec:
    """What a fine-tuning command (run_squad, run_classifier) checks once its spec is built and
    before any other work: --export_dir (the export comes at the end of the run), the input
    `files` (flag names) exist, an evaluation-only run has a fine-tuned model to score, and
    --keep_best has the `reported` metric and --`scored_by` to score; returns the spec with its
    vocabulary found. `without_training`, `tool` and `model_kind` word the refusal of
    --load_from scratch with no --train_file."""
    with in_flags():
        check_export_dir(spec)
    for name in files:
        path = getattr(args, name)
        if path and not os.path.isfile(path):
            raise FlagError(f"--{name} {path} does not exist")
    if not args.train_file and args.load_from == "scratch":
        raise FlagError(f"{without_training} without --train_file needs a fine-tuned model: "
                        f"give --load_from checkpoint --checkpoint_path <a {tool} checkpoint "
                        f"directory> (or --load_from pretrained <a {model_kind} directory>); "
                        "--load_from scratch would score random weights")
    if not args.train_file:
        fine_tuned_path(args)  # before reading any file: a missing model is the first error
    spec = spec.replace(vocabulary=tokenizer_path(args))
    check_keep_best(spec, reported, getattr(args, scored_by), f"--{scored_by}")
    return spec


def settle_features(args, defaults: dict) -> dict:
    """{name: value} of the feature flags in `defaults`; those left out (None): a training run
    takes `defaults`; an evaluation-only run the settings its model was fine-tuned with (the task
    card of --checkpoint_path), and a flag that differs from them is refused (other windows than
    training's give other answers)."""
    card, where = None, "the model"
    if not args.train_file and args.load_from != "scratch":
        path = fine_tuned_path(args)
        card, where = read_task_card(path), f"--checkpoint_path {path}"
    with in_flags():
        return settle({n: getattr(args, n) for n in defaults}, card, defaults, where)


def tokenizer_path(args) -> str:
    """The SentencePiece model of a fine-tuning run: --spm_model, else the one that comes with
    --checkpoint_path (a Hugging Face, Google or exported directory)."""
    if args.spm_model:
        return args.spm_model
    if args.load_from in ("pretrained", "huggingface", "checkpoint") and args.checkpoint_path:
        found = vocabulary_file(args.checkpoint_path)
        if found:
            return found
    raise FlagError("no vocabulary: pass --spm_model (or a --checkpoint_path model directory "
                    "that holds its SentencePiece model)")


# (flag, smallest allowed value) for every count and frequency a runner may have; checked up front
# so a 0 never reaches a modulo or a loop bound.
_MINIMUMS = {
    "total_steps": 1, "warmup_steps": 0, "log_frequency": 1, "checkpoint_frequency": 0,
    "keep_checkpoints": 1, "validation_frequency": 0, "eval_frequency": 0, "squad_frequency": 0,
    "squad_steps": 1,
    "squad_batch_size": 1, "squad_max_seq_length": 8, "eval_batch_size": 1, "shuffle_buffer": 0,
    "max_seq_length": 8, "max_predictions_per_seq": 1, "n_best_size": 1, "max_answer_length": 1,
    "doc_stride": 1, "max_query_length": 1, "plan_ranks": 1, "learning_rate": 0.0,
    "squad_learning_rate": 0.0, "end_learning_rate": 0.0, "max_grad_norm": 0.0,
    "weight_decay": 0.0,
}


def check_training_flags(args) -> None:
    """One FlagError naming the first count or frequency flag that cannot work, or the first
    number flag that is not finite."""
    check_directories(args)
    for name, minimum in _MINIMUMS.items():
        value = getattr(args, name, None)
        if value is not None and value < minimum:
            raise FlagError(f"--{name} must be at least {minimum}, got {value}")
    epochs = getattr(args, "num_train_epochs", None)
    if epochs is not None and not epochs > 0:
        raise FlagError(f"--num_train_epochs must be above 0, got {epochs}")
    proportion = getattr(args, "warmup_proportion", None)
    if proportion is not None and not 0.0 <= proportion <= 1.0:
        raise FlagError(f"--warmup_proportion must be within [0, 1], got {proportion}")
    total, warmup = getattr(args, "total_steps", None), getattr(args, "warmup_steps", None)
    if total is not None and warmup is not None and warmup > total:
        raise FlagError(f"--warmup_steps ({warmup}) exceeds --total_steps ({total})")
    if getattr(args, "load_optimizer_state", False) and args.load_from != "checkpoint":
        raise FlagError("--load_optimizer_state needs --load_from checkpoint")
    check_memory_flags(args)
    for name, value in sorted(vars(args).items()):
        # nan passes every comparison with a bound, and inf is no rate, norm or threshold: a
        # run would start and train on NaN (or, in SQuAD during pretraining, fail each time).
        # Last, so that a flag with a check of its own keeps its own words.
        if isinstance(value, float) and not math.isfinite(value):
            raise FlagError(f"--{name} must be a finite number, got {value}")


DIRECTORY_FLAGS = ("checkpoint_dir", "log_dir", "output_dir", "cache_dir", "export_dir")


def check_directories(args) -> None:
    """A directory flag naming a file would fail deep in TensorFlow or after the training."""
    for name in DIRECTORY_FLAGS:
        path = getattr(args, name, None)
        if path and os.path.exists(path) and not os.path.isdir(path):
            raise FlagError(f"--{name} {path} is a file; expected a directory (or a path that "
                            "does not exist yet)")


def check_memory_flags(args) -> None:
    with in_flags():
        check_batching(batching_of(args))


def check_keep_best(spec: RunSpec, reported: tuple, evaluated: str | None, flag: str) -> None:
    """--keep_best METRIC, checked before any training: a metric this task's evaluation reports,
    and something to score."""
    metric = spec.outputs.keep_best
    if not metric:
        return
    if metric not in reported:
        raise FlagError(f"--keep_best {metric} is no metric this evaluation reports; one of "
                        f"{', '.join(reported)}")
    if not evaluated:
        raise FlagError(f"--keep_best {metric} needs {flag} to evaluate")
