"""Command-line flags shared by the runners, named as in
aws-samples/deep-learning-models where it has the flag, and the model config built from them."""

from __future__ import annotations

import argparse
import contextlib
import functools
import os
import sys

from albert.config import PRESETS, AlbertConfig
from albert.errors import AlbertError, FlagError

# check_fits, check_vocabulary and _parse_override are re-exported for the serving tools and tests.
from albert.run_spec import check_fits, check_vocabulary, model_config  # noqa: F401
from albert.run_spec import parse_override as _parse_override  # noqa: F401


class HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """--help shows each default once: the flag's value when it has one, nothing for a flag off
    by default or whose help already says what its default is ("default ..." in the text)."""

    def _get_help_string(self, action):
        text = action.help or ""
        if "default" in text.lower() or action.default in (None, False, [], argparse.SUPPRESS):
            return text
        return super()._get_help_string(action)


def add_alias(container, new: str, *old: str, values: dict | None = None) -> None:
    """Accept the old spellings `old` of the flag `new` (already added to `container`, a parser
    or one of its groups): the same action, so an old spelling behaves identically (type,
    choices, nargs, default, required, dest), hidden from --help, and each use prints one line
    to stderr, "--old is deprecated; use --new". `values` ({old: new}): old spellings of the
    flag's values, read as the new ones without a word (e.g. v2.0 for squadv2)."""
    actions = container._option_string_actions  # the parser's, shared by its groups
    action = actions[new]
    if not isinstance(action, _Renamed):
        action.__class__ = _renamed(type(action))
        action.renamed = {}
    for name in old:
        if name in actions:
            raise ValueError(f"{name} is already a flag; it cannot become an alias of {new}")
        actions[name] = action
        action.renamed[name] = new
    if values:
        read, spellings = action.type, dict(values)

        def read_value(text):
            text = spellings.get(text, text)
            return read(text) if read else text

        read_value.__name__ = getattr(read, "__name__", "value")  # argparse's "invalid ... value"
        action.type = read_value


class _Renamed:
    """The action of a flag with aliases (add_alias): called under an old spelling, it says so
    once on stderr, then does what it does under the new one."""

    renamed: dict

    def __call__(self, parser, namespace, values, option_string=None):
        if option_string in self.renamed:
            print(f"{option_string} is deprecated; use {self.renamed[option_string]}",
                  file=sys.stderr, flush=True)
        super().__call__(parser, namespace, values, option_string)


@functools.cache
def _renamed(base: type) -> type:
    return type(f"Renamed{base.__name__}", (_Renamed, base), {})


def add_model_flags(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("model")
    g.add_argument("--model_size", default="base", help=f"one of {sorted(PRESETS)}")
    g.add_argument("--model_config", default=None,
                   help="an ALBERT config.json (overrides --model_size)")
    g.add_argument("--config_override", nargs="*", default=[], metavar="KEY=VALUE",
                   help="override config fields, e.g. num_hidden_layers=6 hidden_dropout_prob=0.1")
    g.add_argument("--spm_model", default=None,
                   help="SentencePiece vocabulary: sets vocab_size, saved beside exported models")
    g.add_argument("--vocab_size", type=int, default=None, help="override the vocabulary size")
    g.add_argument("--load_from", choices=("scratch", "checkpoint", "pretrained", "huggingface"),
                   default="scratch",
                   help="scratch: new weights; pretrained: a released model directory (Hugging "
                        "Face or Google ALBERT; 'huggingface' is the same, aws-samples' name); "
                        "checkpoint: the weights of one of our runs")
    g.add_argument("--checkpoint_path", default=None,
                   help="with --load_from pretrained: a local model directory; with checkpoint: "
                        "a checkpoint prefix or directory (default: latest in --checkpoint_dir)")
    g.add_argument("--load_optimizer_state", action="store_true",
                   help="with --load_from checkpoint: also carry the optimizer's moments (e.g. "
                        "phase 2 of two-phase pretraining); the step counter and the learning-"
                        "rate schedule start at 0 all the same")


def add_training_flags(p: argparse.ArgumentParser, *, learning_rate: float, batch: int,
                       optimizer: str, run_name: str, under_output_dir: bool = False) -> None:
    """under_output_dir: a fine-tuner's checkpoints and logs default to <--output_dir>/..., so
    two experiments with two output directories never share (and resume) one checkpoint
    directory (see resolve_paths)."""
    g = p.add_argument_group("training")
    g.add_argument("--filesystem_prefix", default=".",
                   help="root for relative data paths (aws-samples: /fsx on the cloud)")
    g.add_argument("--per_gpu_batch_size", type=_micro_batch, default=None,
                   help=f"sequences per micro-batch on each rank (default {batch}); auto, with "
                        "--global_batch_size: the largest micro-batch that fits and the "
                        "accumulation that makes the global batch (see --memory_budget_gb)")
    g.add_argument("--global_batch_size", type=int, default=None,
                   help="sequences per update over all ranks = per_gpu_batch_size x "
                        "accumulation steps x ranks: with --per_gpu_batch_size the accumulation "
                        "is derived, with --gradient_accumulation_steps the micro-batch; all "
                        "three must agree")
    g.add_argument("--gradient_accumulation_steps", type=int, default=None,
                   help="micro-batches per update (default 1, or derived)")
    g.set_defaults(default_micro_batch=batch)
    g.add_argument("--total_steps", type=int, default=None)
    g.add_argument("--warmup_steps", type=int, default=0)
    g.add_argument("--lr_decay", choices=("from_warmup", "from_zero"), default="from_warmup",
                   help="from_warmup: decay over the steps after warmup (transformers); "
                        "from_zero: Google BERT/ALBERT's schedule, decay over all steps from step "
                        "0 with warmup overriding the first steps")
    g.add_argument("--learning_rate", type=float, default=learning_rate)
    g.add_argument("--end_learning_rate", type=float, default=0.0)
    g.add_argument("--decay_power", type=float, default=1.0)
    g.add_argument("--optimizer", choices=("lamb", "adamw"), default=optimizer)
    g.add_argument("--weight_decay", type=float, default=0.01)
    g.add_argument("--bias_correction", choices=("on", "off"), default="on",
                   help="Adam bias correction of the moments (LAMB paper, every AdamW); off: "
                        "Google's TF1 BERT/ALBERT optimizer, whose first updates are up to 3x "
                        "larger")
    g.add_argument("--max_grad_norm", type=float, default=1.0,
                   help="clip by global norm after the allreduce (0 disables)")
    g.add_argument("--precision", choices=("fp32", "fp16", "bf16"), default="fp32")
    g.add_argument("--recompute", choices=("none", "layers"), default="none",
                   help="layers: keep only each transformer layer's input for the backward pass "
                        "and recompute its activations there (about a third more compute for a "
                        "fraction of the activation memory; the README's memory table)")
    g.add_argument("--memory_budget_gb", type=float, default=None,
                   help="memory of one rank, in GB (GiB), for --per_gpu_batch_size auto: decide "
                        "from the memory plan against it. Default: on a GPU, by trial steps; on "
                        "a CPU, this machine's available memory shared by its ranks")
    g.add_argument("--xla", choices=("auto", "on", "off"), default="auto",
                   help="XLA-compile the step. auto: the update always, the gradient on GPUs, and "
                        "on CPUs when XLA's matmul is faster than oneDNN's (probed at start)")
    g.add_argument("--skip_xla", action="store_true", help="same as --xla off (aws-samples name)")
    g.add_argument("--eager", action="store_true", help="run eagerly (debugging)")
    g.add_argument("--fp16_allreduce", action="store_true",
                   help="send gradients through the allreduce in fp16; under bf16/fp32 this turns "
                        "on dynamic loss scaling so small gradients survive the cast")
    g.add_argument("--seed", type=int, default=42)
    g.add_argument("--log_frequency", type=int, default=10)
    g.add_argument("--checkpoint_frequency", type=int, default=1000)
    g.add_argument("--keep_checkpoints", type=int, default=5)
    where = "<output_dir>" if under_output_dir else os.path.join("runs", run_name)
    g.add_argument("--checkpoint_dir", default=None if under_output_dir else
                   os.path.join(where, "checkpoints"),
                   help=f"this run's checkpoints (default {os.path.join(where, 'checkpoints')}); "
                        "a run already there resumes if this command describes the same run, "
                        "else the command is refused")
    g.add_argument("--overwrite_checkpoint_dir", action="store_true",
                   help="discard the run in --checkpoint_dir and start this one")
    if under_output_dir:
        g.add_argument("--keep_best", default=None, metavar="METRIC",
                       help="keep the model of the best evaluation (e.g. accuracy, f1; loss is "
                            "lower-better) in <checkpoint_dir>/best, and export that one")
    g.add_argument("--log_dir", default=None if under_output_dir else os.path.join(where, "logs"),
                   help=f"metrics.jsonl and TensorBoard events (default "
                        f"{os.path.join(where, 'logs')})")
    g.add_argument("--no_progress", action="store_true", help="no progress bar")
    g.add_argument("--plan_only", action="store_true",
                   help="print the batch plan and the memory plan per GPU (and check the flags), "
                        "then exit without training")
    g.add_argument("--plan_ranks", type=int, default=None,
                   help="with --plan_only: plan for this many ranks (e.g. 8 GPUs) instead of "
                        "this process's")


def add_fine_tuning_flags(g, *, run_name: str, epochs: float, scored: str) -> None:
    """The task-group flags both fine-tuners take alike; `scored`: the flag of the file they
    score (--eval_file, --predict_file)."""
    g.add_argument("--num_train_epochs", type=float, default=epochs,
                   help="used when --total_steps is not given")
    g.add_argument("--warmup_proportion", type=float, default=0.1,
                   help="warmup as a fraction of the steps when --warmup_steps is not given")
    g.add_argument("--eval_batch_size", type=int, default=64)
    g.add_argument("--eval_frequency", type=int, default=0,
                   help=f"also score {scored} every N updates during training (0: at the end "
                        "only), logged under eval/ like the training metrics")
    g.add_argument("--output_dir", default=os.path.join("runs", run_name),
                   help="this run's results, and its checkpoints, logs and feature cache unless "
                        "given apart; one run per directory")
    g.add_argument("--overwrite_output_dir", action="store_true",
                   help="discard the run in --output_dir (its checkpoints) and start this one")
    g.add_argument("--cache_dir", default=None,
                   help="feature cache, keyed by file, vocabulary and settings (default "
                        "<output_dir>/cache; share one between runs to featurize once)")


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


def resolve_paths(args) -> None:
    """A fine-tuner's paths. Relative input files are under --filesystem_prefix, as
    run_pretraining's --train_dir is (the SageMaker launcher sets it to the FSx channel, and a
    user names data files relative to the file system). The directories not given live under
    --output_dir; and --overwrite_output_dir discards the run there as --overwrite_checkpoint_dir
    does."""
    prefix = getattr(args, "filesystem_prefix", ".")
    if prefix and prefix != ".":
        for name in ("train_file", "eval_file", "predict_file", "test_file"):
            path = getattr(args, name, None)
            if path and not os.path.isabs(path):
                setattr(args, name, os.path.join(prefix, path))
    for name, sub in (("checkpoint_dir", "checkpoints"), ("log_dir", "logs"),
                      ("cache_dir", "cache")):
        if getattr(args, name, "unset") is None:
            setattr(args, name, os.path.join(args.output_dir, sub))
    if getattr(args, "overwrite_output_dir", False):
        inside = os.path.realpath(args.checkpoint_dir).startswith(
            os.path.realpath(args.output_dir) + os.sep)
        if not inside and not args.overwrite_checkpoint_dir:
            raise FlagError(f"--overwrite_output_dir discards the run under --output_dir "
                            f"{args.output_dir}; --checkpoint_dir {args.checkpoint_dir} lies "
                            "elsewhere: add --overwrite_checkpoint_dir to discard that one")
        args.overwrite_checkpoint_dir = True


def resolve_spec(args, task: str, *, features: dict | None = None, data: dict | None = None,
                 options: dict | None = None):
    """The run spec (albert.run_spec.RunSpec) of a runner's parsed flags: the one place where
    flags become the objects the library takes. Pure: reads no file but the vocabulary's bytes
    for its checksum (later, when recorded). `features`, `data`, `options`: the task's settings,
    files by role, and knobs that do not define the run, from the runner's own flags."""
    from albert.run_spec import Batching, Execution, ModelSource, Optimization, Outputs, RunSpec

    get = functools.partial(getattr, args)
    load_from = "pretrained" if args.load_from == "huggingface" else args.load_from
    return RunSpec(
        task=task,
        model=ModelSource(load_from=load_from, checkpoint_path=args.checkpoint_path,
                          load_optimizer_state=bool(args.load_optimizer_state),
                          model_size=args.model_size, model_config=args.model_config,
                          config_override=tuple(args.config_override or ()),
                          vocab_size=args.vocab_size),
        vocabulary=args.spm_model,
        features=dict(features or {}),
        data=dict(data or {}),
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
        batching=Batching(per_gpu_batch_size=args.per_gpu_batch_size,
                          global_batch_size=args.global_batch_size,
                          gradient_accumulation_steps=args.gradient_accumulation_steps,
                          default_micro_batch=args.default_micro_batch,
                          memory_budget_gb=args.memory_budget_gb, recompute=args.recompute),
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
        options=dict(options or {}),
    )


def _micro_batch(text: str):
    """--per_gpu_batch_size: a positive integer or 'auto'."""
    if text == "auto":
        return text
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer or 'auto', got "
                                         f"{text!r}") from None


def model_config_from_flags(args) -> AlbertConfig:
    """--model_config or --model_size, then --spm_model/--vocab_size and --config_override."""
    spec = resolve_spec(args, "model")
    return model_config(spec.model, spec.vocabulary)


def plan_ranks(args) -> int:
    """--plan_only's rank count: --plan_ranks, else the launcher's (horovodrun -np N), else 1."""
    from albert.distributed import launched_by_horovod

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


def settle_features(args, defaults: dict) -> None:
    """Feature flags left out (None): a training run takes `defaults`; an evaluation-only run
    the settings its model was fine-tuned with (the task card of --checkpoint_path), and a flag
    that differs from them is refused (other windows than training's give other answers)."""
    from albert.run_spec import read_task_card, settle

    card, where = None, "the model"
    if not args.train_file and args.load_from != "scratch":
        path = fine_tuned_path(args)
        card, where = read_task_card(path), f"--checkpoint_path {path}"
    for name, value in settle({n: getattr(args, n) for n in defaults}, card, defaults,
                              where).items():
        setattr(args, name, value)


def tokenizer_path(args) -> str:
    """The SentencePiece model of a fine-tuning run: --spm_model, else the one that comes with
    --checkpoint_path (a Hugging Face, Google or exported directory)."""
    if args.spm_model:
        return args.spm_model
    if args.load_from in ("pretrained", "huggingface", "checkpoint") and args.checkpoint_path:
        from albert.convert import vocabulary_file

        found = vocabulary_file(args.checkpoint_path)
        if found:
            return found
    raise FlagError("no vocabulary: pass --spm_model (or a --checkpoint_path model directory "
                    "that holds its SentencePiece model)")


def xla_plan_from_flags(args, dist, recorded: dict | None = None):
    """--xla/--skip_xla/--eager/--precision -> xla_plan.XlaPlan (for tools without a run spec:
    scripts/benchmark.py)."""
    from albert.run_spec import Execution
    from albert.xla_plan import plan_for_run

    return plan_for_run(Execution(precision=args.precision, eager=bool(args.eager),
                                  xla="off" if args.skip_xla else args.xla), dist, recorded)


# (flag, smallest allowed value) for every count and frequency a runner may have; checked up front
# so a 0 never reaches a modulo or a loop bound.
_MINIMUMS = {
    "total_steps": 1, "warmup_steps": 0, "log_frequency": 1, "checkpoint_frequency": 0,
    "keep_checkpoints": 1, "validation_frequency": 0, "eval_frequency": 0, "squad_frequency": 0,
    "squad_steps": 1,
    "squad_batch_size": 1, "squad_max_seq_length": 8, "eval_batch_size": 1, "shuffle_buffer": 0,
    "max_seq_length": 8, "max_predictions_per_seq": 1, "n_best_size": 1, "max_answer_length": 1,
    "doc_stride": 1, "max_query_length": 1, "plan_ranks": 1, "learning_rate": 0.0,
    "end_learning_rate": 0.0, "max_grad_norm": 0.0, "weight_decay": 0.0,
}


def check_training_flags(args) -> None:
    """One FlagError naming the first count or frequency flag that cannot work."""
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


DIRECTORY_FLAGS = ("checkpoint_dir", "log_dir", "output_dir", "cache_dir", "export_dir")


def check_directories(args) -> None:
    """A directory flag naming a file would fail deep in TensorFlow or after the training."""
    for name in DIRECTORY_FLAGS:
        path = getattr(args, name, None)
        if path and os.path.exists(path) and not os.path.isdir(path):
            raise FlagError(f"--{name} {path} is a file; expected a directory (or a path that "
                            "does not exist yet)")


def check_memory_flags(args) -> None:
    from albert.memory import check_batching

    check_batching(resolve_spec(args, "check").batching)


@contextlib.contextmanager
def user_errors():
    """Turn the errors a user can fix into one 'error: ...' line and exit status 2, instead of a
    traceback: the AlbertError family (a bad flag, config, checkpoint or input file; an output
    that cannot be written) and the OSErrors that name their path (a file missing, not
    readable, a directory where a file belongs or the other way round). Anything else, a plain
    ValueError included, is a bug and keeps its traceback."""
    try:
        yield
    except (AlbertError, FileNotFoundError, PermissionError, IsADirectoryError,
            NotADirectoryError) as e:
        print(f"error: {e}", file=sys.stderr, flush=True)
        sys.exit(2)


class _QuietImport:
    """A meta-path finder that imports TensorFlow with the process's stderr (file descriptor 2)
    pointed at /dev/null: its C++ start-up lines ("All log messages before
    absl::InitializeLog()...", "oneDNN custom operations are on...", written before any log level
    applies) are noise for this toolkit's users. A Python error of the import is still raised, and
    shown once stderr is back."""

    def find_spec(self, name, path=None, target=None):
        if name != "tensorflow":
            return None
        sys.meta_path.remove(self)  # once; and let the real finders find it
        import importlib.util

        spec = importlib.util.find_spec(name)
        if spec is None or spec.loader is None:
            return spec
        real = spec.loader.exec_module

        def exec_module(module):
            sys.stderr.flush()
            saved, null = os.dup(2), os.open(os.devnull, os.O_WRONLY)
            os.dup2(null, 2)
            try:
                real(module)
            finally:
                os.dup2(saved, 2)
                os.close(saved)
                os.close(null)

        spec.loader.exec_module = exec_module
        return spec


def quiet_start(verbose: bool) -> None:
    """What a command prints before its own first line: TensorFlow's and transformers' start-up
    noise silenced, unless --verbose or the user set their variables themselves."""
    if verbose or os.environ.get("TF_CPP_MIN_LOG_LEVEL", "2") not in ("1", "2", "3"):
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "0")
        return
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    # "Token indices sequence length is longer than the specified maximum": windowing follows.
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    if "tensorflow" not in sys.modules and not any(isinstance(f, _QuietImport)
                                                   for f in sys.meta_path):
        sys.meta_path.insert(0, _QuietImport())


def quiet_argv(argv=None) -> list[str]:
    """A command's arguments (sys.argv[1:] by default) without --verbose, which every command
    takes, after quiet_start for it: what each main() does first."""
    argv = list(sys.argv[1:] if argv is None else argv)
    quiet_start("--verbose" in argv)
    return [a for a in argv if a != "--verbose"]


def run_main(parse_args, run, argv=None, prepare=None) -> int:
    """A CLI's main(): start-up noise silenced (quiet_start; --verbose, which every command
    takes, keeps it), logging set up as every tool logs, flags parsed, run(args) with the user's
    errors turned into one line (user_errors). With `prepare`, run(args, prepare(args)):
    prepare's checks need no TensorFlow, and their FlagError is answered before run() imports
    it, so a typo costs no wait."""
    import logging

    argv = quiet_argv(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    logging.getLogger("absl").setLevel(logging.WARNING)  # tf.data's per-save sharding chatter
    try:
        args = parse_args(argv)  # resolving paths there may refuse a combination of flags
    except FlagError as e:
        print(f"error: {e}", file=sys.stderr, flush=True)
        return 2
    if prepare is None:
        with user_errors():
            return run(args)
    try:
        prepared = prepare(args)
    except FlagError as e:
        print(f"error: {e}", file=sys.stderr, flush=True)
        return 2
    with user_errors():
        return run(args, prepared)
