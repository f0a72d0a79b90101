"""Copying a checkpoint's tensors into a model, checked: the one place where both published
layouts (io.huggingface, io.google_tf1) meet the model's variables, so that a missing tensor, a
shape that does not fit or a config that differs reads the same whichever layout it came from.
Also the one check that a vocabulary fits a model (check_vocabulary), which every tool and
save_pretrained make before pairing the two."""

from __future__ import annotations

import logging

import numpy as np

from albert.errors import CheckpointError, SettingError

logger = logging.getLogger(__name__)

# Dropout is a training setting, not part of the weights: a fine-tune may choose its own.
FREE_FIELDS = ("hidden_dropout_prob", "attention_probs_dropout_prob", "classifier_dropout_prob")


def check_config(source: str, file_config, config):
    """The checkpoint's config, or the requested one when they agree but for dropout."""
    if config is None:
        return file_config
    diffs = [
        f"{k}: checkpoint {getattr(file_config, k)!r} vs requested {getattr(config, k)!r}"
        for k in file_config.__dataclass_fields__
        if getattr(file_config, k) != getattr(config, k) and k not in FREE_FIELDS
    ]
    if diffs:
        raise CheckpointError(
            f"config of {source} does not match the requested model: " + "; ".join(diffs)
        )
    return config


def check_vocabulary(config, pieces: int, spm_model: str) -> None:
    """The one check that a vocabulary's size is the model's (else its ids mean other tokens,
    or index past the embedding table: transformers' IndexError). A SettingError naming
    spm_model, every caller's name for the vocabulary (save_pretrained's argument, the
    commands' --spm_model)."""
    if pieces != config.vocab_size:
        raise SettingError(f"the vocabulary {spm_model} has {pieces} pieces but the model's "
                           f"vocab_size is {config.vocab_size}: pass the {{spm_model}} it was "
                           "trained with", "spm_model")


def assign(model, state: dict, names, source: str, optional: set, require_heads: bool):
    """Copy state[name] into each (name, variable, transpose) of `names`, checking shapes.

    Names in `optional` (task heads, the pooler) may be absent: they keep their fresh
    initialisation and are logged, or raise with require_heads (inference must not run on
    random weights). Any other absence raises.
    """
    missing = []
    for name, var, transpose in names:
        if name not in state:
            if name not in optional:
                raise CheckpointError(f"{source} is missing tensor {name}")
            missing.append(name)
            continue
        value = state[name].T if transpose else state[name]
        if tuple(value.shape) != tuple(var.shape):
            raise CheckpointError(
                f"{source}: tensor {name} has shape {tuple(state[name].shape)}, the model "
                f"expects {tuple(var.shape)[::-1] if transpose else tuple(var.shape)}"
            )
        var.assign(np.asarray(value, dtype=np.float32))
    if missing and require_heads:
        raise CheckpointError(
            f"{source} lacks weights the {type(model).__name__} model needs (missing "
            f"{', '.join(missing)}): it was saved from another kind of model"
        )
    if missing:
        logger.warning("newly initialised (not in %s): %s", source, ", ".join(missing))
