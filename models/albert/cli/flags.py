"""The command line the tools share: the argparse groups of the runners' flags (named as in
aws-samples/deep-learning-models where it has the flag), old spellings as aliases, --help with
each default once, quiet start-up, and one-line errors (user_errors, run_main). What the parsed
flags become is albert.cli.resolve's."""

from __future__ import annotations

import argparse
import contextlib
import copy
import functools
import importlib.util
import logging
import os
import sys

from albert.errors import AlbertError, FlagError
from albert.model.config import PRESETS, RECOMPUTE_MODES

# check_fits, check_vocabulary and _parse_override are re-exported for the serving tools and tests.
from albert.train.run_spec import check_fits, check_vocabulary  # noqa: F401
from albert.train.run_spec import parse_override as _parse_override  # noqa: F401


class HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """--help shows each default once: the flag's value when it has one (a flag without help text
    too, and a default of 0), nothing for a flag off by default or whose help already says what
    its default is ("default ..." in the text)."""

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
