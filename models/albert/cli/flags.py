"""The command line the tools share: every tool's parser class (Parser: --help with each default
once, errors as FlagError where asked), old spellings declared with their flag (Renamed), the
argparse groups of the runners' flags (named as in aws-samples/deep-learning-models where it has
the flag), and one-line errors (user_errors, run_main). The quiet start-up is
albert.cli.quiet_start's; what the parsed flags become, albert.cli.resolve's."""

from __future__ import annotations

import argparse
import contextlib
import copy
import logging
import os
import sys

from albert.cli.quiet_start import import_tensorflow, start_environment
from albert.errors import AlbertError, FlagError, SettingError
from albert.model.config import PRESETS, RECOMPUTE_MODES

# check_fits, check_vocabulary and _parse_override are re-exported for the serving tools and tests.
from albert.train.run_spec import check_fits, check_vocabulary  # noqa: F401
from albert.train.run_spec import parse_override as _parse_override  # noqa: F401


class HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """--help shows each default once: the flag's value when it has one (a flag without help text
    too, and a default of 0), nothing for a flag off by default or whose help already says what
    its default is ("default ..." in the text); a renamed flag (Renamed) under its new spelling
    only."""

    def add_argument(self, action):
        if isinstance(action, Renamed) and action.old:
            action = copy.copy(action)  # the old spellings are read, never offered
            action.option_strings = [o for o in action.option_strings if o not in action.old]
        super().add_argument(action)

    def _format_action(self, action):
        if not (action.help or "").strip() and action.option_strings and shows_default(action):
            action = copy.copy(action)  # argparse prints no help line for a flag without help
            action.help = "default: %(default)s"
        return super()._format_action(action)

    def _get_help_string(self, action):
        text = action.help or ""
        if "default" in text.lower() or not shows_default(action):
            return text
        return super()._get_help_string(action)


def shows_default(action: argparse.Action) -> bool:
    """Whether --help shows the flag's default: not for none, off, empty or hidden (by identity,
    not equality: a default of 0 or 0.0 is a value to show, though it equals False)."""
    default = action.default
    return not (default is None or default is False or default is argparse.SUPPRESS
                or (isinstance(default, list | tuple) and not default))


class Parser(argparse.ArgumentParser):
    """Every tool's ArgumentParser (each command's build_parser()): --help with each default once
    (HelpFormatter), a renamed flag named by its new spelling in errors as in --help, and its
    actions listed (actions(), option_actions()) for whoever encodes or checks its flags. With
    exit_on_error=False, which argparse itself honours only in part (an unknown or missing flag
    still exits), every parsing error is a FlagError instead of usage and exit status 2: what
    the SageMaker launcher checks a job's flags with before anything is paid for.

    Every tool takes --verbose (TensorFlow's start-up lines shown, albert.cli.quiet_start),
    declared here as any flag: in --help, abbreviated as argparse allows (allow_abbrev), a
    SageMaker hyperparameter as any bare flag; run_main reads it from the parsed flags."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("formatter_class", HelpFormatter)
        super().__init__(*args, **kwargs)
        self.add_argument("--verbose", action="store_true",
                          help="show TensorFlow's start-up lines and its C++ log (as "
                               "ALBERT_SHOW_START_UP=1 does)")

    def actions(self) -> list[argparse.Action]:
        """Every argument's action, its groups' included, in the order they were added."""
        # The one read of argparse's private state: it keeps a parser's actions (its groups'
        # too) in _actions and has no public way to list them; format_help walks the same list.
        return list(self._actions)

    def option_actions(self) -> dict[str, argparse.Action]:
        """Each option string (an old spelling too) -> its action."""
        return {option: action for action in self.actions() for option in action.option_strings}

    def parse_known_args(self, args=None, namespace=None):
        try:
            return super().parse_known_args(args, namespace)
        except argparse.ArgumentError as e:  # what argparse lets through with exit_on_error=False
            self.error(str(e))

    def error(self, message):
        for action in self.actions():
            if isinstance(action, Renamed) and action.old:
                # argparse names a flag by all its option strings joined ("--model_size/
                # --model_sizes"); the old ones are hidden, so errors name it as --help does.
                message = message.replace("/".join(action.option_strings),
                                          action.option_strings[0])
        if not self.exit_on_error:
            raise FlagError(message)
        super().error(message)


class Renamed(argparse.Action):
    """A flag that also reads its old spellings, declared with it:
    `add_argument("--new", action=Renamed, old=("--old",), ...)`. An old spelling is the same
    action, so it behaves identically (type, choices, nargs, default, required, dest; --old=value
    too), is hidden from --help, and each use prints one line to stderr, "--old is deprecated;
    use --new". `old_values` ({old: new}): old spellings of the flag's values, read as the new
    ones without a word (e.g. v2.0 for squadv2). It stores its value as argparse's default
    action does."""

    def __init__(self, option_strings, dest, *, old=(), old_values=None, type=None, **kwargs):
        if old_values:
            read, spellings = type, dict(old_values)

            def read_value(text):
                text = spellings.get(text, text)
                return read(text) if read else text

            read_value.__name__ = getattr(read, "__name__", "value")  # "invalid ... value"
            type = read_value
        # argparse registers the option strings of the action it has just built: the old
        # spellings join them here, after the new one, which --help and errors name.
        super().__init__([*option_strings, *old], dest, type=type, **kwargs)
        self.old = tuple(old)

    def __call__(self, parser, namespace, values, option_string=None):
        if option_string in self.old:
            print(f"{option_string} is deprecated; use {self.option_strings[0]}",
                  file=sys.stderr, flush=True)
        setattr(namespace, self.dest, values)


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


def add_training_flags(p: argparse.ArgumentParser, *, learning_rate: float | None, batch: int,
                       optimizer: str, run_name: str, under_output_dir: bool = False,
                       learning_rate_help: str | None = None) -> None:
    """under_output_dir: a fine-tuner's checkpoints and logs default to <--output_dir>/..., so
    two experiments with two output directories never share (and resume) one checkpoint
    directory (see resolve_paths). learning_rate None: the run settles it by the model's size
    (albert.tasks.Task.default_learning_rate), as learning_rate_help says."""
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
    g.add_argument("--total_steps", type=int, default=None,
                   help="updates to train (required by run_pretraining; the fine-tuners: from "
                        "--num_train_epochs unless given)")
    g.add_argument("--warmup_steps", type=int, default=0,
                   help="updates of linear warmup (the fine-tuners: from --warmup_proportion "
                        "unless given)")
    g.add_argument("--lr_decay", choices=("from_warmup", "from_zero"), default="from_warmup",
                   help="from_warmup: decay over the steps after warmup (transformers); "
                        "from_zero: Google BERT/ALBERT's schedule, decay over all steps from step "
                        "0 with warmup overriding the first steps")
    g.add_argument("--learning_rate", type=float, default=learning_rate,
                   help=learning_rate_help or "peak learning rate")
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
    g.add_argument("--recompute", choices=RECOMPUTE_MODES, default="none",
                   help="layers: keep only each transformer layer's input for the backward pass "
                        "and recompute its activations there (about a third more compute for a "
                        "fraction of the activation memory; docs/memory.md's table)")
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


def add_export_flag(group, ask: str) -> None:
    """--export_dir, as every fine-tuner takes it; `ask`: the tool that asks the model."""
    group.add_argument("--export_dir", default=None,
                       help="also write the fine-tuned model as a SavedModel here (the layout of "
                            f"python -m albert.export; serve it or ask it with {ask})")


def _micro_batch(text: str):
    """--per_gpu_batch_size: a positive integer or 'auto'."""
    if text == "auto":
        return text
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer or 'auto', got "
                                         f"{text!r}") from None


@contextlib.contextmanager
def in_flags():
    """A library SettingError raised in the block raised again as the command line's FlagError,
    its settings named as flags: for the command-line functions whose callers read the message
    (albert.cli.resolve), not only print it."""
    try:
        yield
    except FlagError:
        raise
    except SettingError as e:
        raise FlagError(e.on_command_line()) from None


# What a user can fix, and so gets one line and exit status 2: the AlbertError family and the
# OSErrors that name their path.
USER_ERRORS = (AlbertError, FileNotFoundError, PermissionError, IsADirectoryError,
               NotADirectoryError)


def as_flags(error: BaseException) -> str:
    """An error's message as a command says it: a SettingError names its settings as flags
    (`--name`), whichever layer raised it; anything else as it is."""
    return error.on_command_line() if isinstance(error, SettingError) else str(error)


def user_message(error: BaseException) -> str:
    """An error's one line, as every tool prints it."""
    return f"error: {as_flags(error)}"


@contextlib.contextmanager
def user_errors():
    """Turn the errors a user can fix into one 'error: ...' line (user_message) and exit status
    2, instead of a traceback: the AlbertError family (a bad flag or setting, config,
    checkpoint or input file; an output that cannot be written) and the OSErrors that name their
    path (a file missing, not readable, a directory where a file belongs or the other way
    round). Anything else, a plain ValueError included, is a bug and keeps its traceback."""
    try:
        yield
    except USER_ERRORS as e:
        print(user_message(e), file=sys.stderr, flush=True)
        sys.exit(2)


def run_main(parse_args, run, argv=None, prepare=None, *, needs_tensorflow: bool = True) -> int:
    """Every tool's main(): logging set up as every tool logs, flags parsed, the start-up
    variables set (albert.cli.quiet_start.start_environment, from the parsed --verbose), then
    TensorFlow imported with its start-up lines captured, then run(args) with the user's errors
    turned into one line and exit status 2 (user_errors). A parsing error is answered before
    TensorFlow is imported, so a typo costs no wait. With `prepare`, run(args, prepare(args)):
    prepare's checks need no TensorFlow either, and a user's error there is answered (one line,
    status 2) before it. needs_tensorflow=False: a tool that never imports TensorFlow (the data
    tools); a runner's --plan_only reads its plan without it too."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    logging.getLogger("absl").setLevel(logging.WARNING)  # tf.data's per-save sharding chatter
    try:
        args = parse_args(argv)  # resolving paths there may refuse a combination of flags
    except SettingError as e:
        print(user_message(e), file=sys.stderr, flush=True)
        return 2
    # Before anything imports TensorFlow or transformers: they read these as they start.
    start_environment(args.verbose)
    prepared = None
    if prepare is not None:
        try:
            prepared = prepare(args)
        except USER_ERRORS as e:
            print(user_message(e), file=sys.stderr, flush=True)
            return 2
    if needs_tensorflow and not getattr(args, "plan_only", False):
        import_tensorflow(args.verbose)
    with user_errors():
        return run(args) if prepare is None else run(args, prepared)
