"""Command-line flags shared by run_pretraining and run_squad, named as in
aws-samples/deep-learning-models where it has the flag, and the model config built from them."""

from __future__ import annotations

import argparse
import ast
import contextlib
import os
import sys

from albert.config import PRESETS, AlbertConfig


class FlagError(ValueError):
    """A flag value that cannot work; the message names the flag."""


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
    g.add_argument("--load_from", choices=("scratch", "checkpoint", "huggingface"),
                   default="scratch")
    g.add_argument("--checkpoint_path", default=None,
                   help="with --load_from huggingface: a local HF ALBERT directory; with "
                        "checkpoint: a checkpoint prefix or directory (default: latest in "
                        "--checkpoint_dir)")
    g.add_argument("--load_optimizer_state", action="store_true",
                   help="with --load_from checkpoint and another run's --checkpoint_path: also "
                        "restore optimizer slots and step (resuming from --checkpoint_dir always "
                        "does)")


def add_training_flags(p: argparse.ArgumentParser, *, learning_rate: float, batch: int,
                       optimizer: str, run_name: str) -> None:
    g = p.add_argument_group("training")
    g.add_argument("--filesystem_prefix", default=".",
                   help="root for relative data paths (aws-samples: /fsx on the cloud)")
    g.add_argument("--per_gpu_batch_size", type=int, default=batch)
    g.add_argument("--global_batch_size", type=int, default=None,
                   help="if set, must equal per_gpu_batch_size x ranks x accumulation steps; "
                        "per_gpu_batch_size is derived from it")
    g.add_argument("--gradient_accumulation_steps", type=int, default=1)
    g.add_argument("--total_steps", type=int, default=None)
    g.add_argument("--warmup_steps", type=int, default=0)
    g.add_argument("--learning_rate", type=float, default=learning_rate)
    g.add_argument("--end_learning_rate", type=float, default=0.0)
    g.add_argument("--decay_power", type=float, default=1.0)
    g.add_argument("--optimizer", choices=("lamb", "adamw"), default=optimizer)
    g.add_argument("--weight_decay", type=float, default=0.01)
    g.add_argument("--max_grad_norm", type=float, default=1.0,
                   help="clip by global norm after the allreduce (0 disables)")
    g.add_argument("--precision", choices=("fp32", "fp16", "bf16"), default="fp32")
    g.add_argument("--xla", choices=("auto", "on", "off"), default="auto",
                   help="XLA-compile the step. auto: the update always, the gradient on GPUs, and "
                        "on CPUs when XLA's matmul is faster than oneDNN's (probed at start)")
    g.add_argument("--skip_xla", action="store_true", help="same as --xla off (aws-samples name)")
    g.add_argument("--eager", action="store_true", help="run eagerly (debugging)")
    g.add_argument("--fp16_allreduce", action="store_true",
                   help="compress gradients to fp16 for the allreduce")
    g.add_argument("--seed", type=int, default=42)
    g.add_argument("--log_frequency", type=int, default=10)
    g.add_argument("--checkpoint_frequency", type=int, default=1000)
    g.add_argument("--keep_checkpoints", type=int, default=5)
    g.add_argument("--checkpoint_dir", default=os.path.join("runs", run_name, "checkpoints"))
    g.add_argument("--log_dir", default=os.path.join("runs", run_name, "logs"))
    g.add_argument("--no_progress", action="store_true", help="no progress bar")


def _parse_override(item: str):
    if "=" not in item:
        raise FlagError(f"--config_override expects KEY=VALUE, got {item!r}")
    key, raw = item.split("=", 1)
    try:
        value = ast.literal_eval(raw)
    except (ValueError, SyntaxError):
        value = raw
    return key.strip(), value


def model_config_from_flags(args) -> AlbertConfig:
    """--model_config or --model_size, then --spm_model/--vocab_size and --config_override."""
    if args.model_config:
        config = AlbertConfig.from_json_file(args.model_config)
        data = config.to_dict()
    else:
        if args.model_size not in PRESETS:
            raise FlagError(f"--model_size {args.model_size!r} is unknown; expected one of "
                            f"{sorted(PRESETS)}")
        data = AlbertConfig.from_preset(args.model_size).to_dict()
    if args.spm_model:
        from albert.tokenization import load_spm

        data["vocab_size"] = load_spm(args.spm_model).GetPieceSize()
    if args.vocab_size:
        data["vocab_size"] = args.vocab_size
    fields = set(AlbertConfig.__dataclass_fields__)
    for item in args.config_override:
        key, value = _parse_override(item)
        if key not in fields:
            raise FlagError(f"--config_override: {key!r} is not an AlbertConfig field")
        data[key] = value
    try:
        return AlbertConfig.from_dict(data)
    except (TypeError, ValueError) as e:
        raise FlagError(f"invalid model configuration: {e}") from None


def model_from_flags(cls, args, max_seq_length: int):
    """The model a run starts from: a Hugging Face directory (--load_from huggingface) or a new one
    built from --model_size/--model_config and overrides; checked against max_seq_length."""
    if args.load_from == "huggingface":
        if not args.checkpoint_path:
            raise FlagError("--load_from huggingface needs --checkpoint_path (a local directory)")
        model = cls.from_pretrained(args.checkpoint_path)
    else:
        model = cls(model_config_from_flags(args)).build_for_config()
    if max_seq_length > model.config.max_position_embeddings:
        raise FlagError(f"--max_seq_length {max_seq_length} exceeds the model's "
                        f"max_position_embeddings ({model.config.max_position_embeddings})")
    return model


def xla_plan_from_flags(args, dist):
    """--xla/--skip_xla/--eager -> training.XlaPlan (which step functions XLA compiles)."""
    from albert.training import XlaPlan, choose_xla

    if args.eager:
        return XlaPlan(False, False, "--eager")
    return choose_xla("off" if args.skip_xla else args.xla, args.precision, dist)


def resolve_batch_size(args, ranks: int) -> int:
    """per_gpu_batch_size, checked against --global_batch_size when that is given."""
    accum = args.gradient_accumulation_steps
    if accum < 1:
        raise FlagError(f"--gradient_accumulation_steps must be >= 1, got {accum}")
    if args.global_batch_size:
        per = args.global_batch_size // (ranks * accum)
        if per * ranks * accum != args.global_batch_size or per < 1:
            raise FlagError(
                f"--global_batch_size {args.global_batch_size} is not divisible by ranks "
                f"({ranks}) x --gradient_accumulation_steps ({accum})"
            )
        return per
    if args.per_gpu_batch_size < 1:
        raise FlagError(f"--per_gpu_batch_size must be >= 1, got {args.per_gpu_batch_size}")
    return args.per_gpu_batch_size


@contextlib.contextmanager
def user_errors():
    """Turn the errors a user can fix (bad flag, missing data, wrong checkpoint) into one
    'error: ...' line and exit status 2, instead of a traceback."""
    from albert.convert import CheckpointError
    from albert.data.reader import DataError

    try:
        yield
    except (FlagError, DataError, CheckpointError, FileNotFoundError, PermissionError) as e:
        print(f"error: {e}", file=sys.stderr, flush=True)
        sys.exit(2)
    except ValueError as e:
        # Our own ValueErrors name the flag or file; TensorFlow's are not raised as ValueError
        # from the paths that reach here.
        print(f"error: {e}", file=sys.stderr, flush=True)
        sys.exit(2)
