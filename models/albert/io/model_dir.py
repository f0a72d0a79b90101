"""What a model directory holds, read from its file names alone: which published layout it is
(`pretrained_kind`), the vocabulary that comes with it (`vocabulary_file`), and a Google
release's config and TF1 checkpoint (`google_config_path`, `google_checkpoint_prefix`).

No TensorFlow: the commands ask this at their start, before they load a model (cli.resolve's
vocabulary, answer, classify, export); io.pretrained and io.google_tf1 load what it finds.
"""

from __future__ import annotations

import os
import re

from albert.errors import CheckpointError
from albert.io.huggingface import HF_VOCAB_NAME, PYTORCH_NAME, SAFETENSORS_NAME
from albert.model.config import GOOGLE_CONFIG_NAME

GOOGLE_VOCAB_NAME = "30k-clean.model"


def google_config_path(directory: str) -> str | None:
    """albert_config.json in `directory`, or under its assets/ (as TF-Hub modules keep it)."""
    for candidate in (os.path.join(directory, GOOGLE_CONFIG_NAME),
                      os.path.join(directory, "assets", GOOGLE_CONFIG_NAME)):
        if os.path.isfile(candidate):
            return candidate
    return None


def google_checkpoint_prefix(directory: str) -> str | None:
    """The TF1 checkpoint of a Google ALBERT directory, as a prefix (without .index).

    Preference: model.ckpt-best (v2 releases), model.ckpt, the highest model.ckpt-<step> (v1
    releases, Estimator runs), then a TF-Hub module's variables/variables. None if none exists.
    """
    def exists(prefix):
        return os.path.isfile(prefix + ".index")

    for name in ("model.ckpt-best", "model.ckpt"):
        if exists(os.path.join(directory, name)):
            return os.path.join(directory, name)
    steps = []
    for name in os.listdir(directory):
        m = re.fullmatch(r"model\.ckpt-(\d+)\.index", name)
        if m:
            steps.append(int(m.group(1)))
    if steps:
        return os.path.join(directory, f"model.ckpt-{max(steps)}")
    hub = os.path.join(directory, "variables", "variables")
    return hub if exists(hub) else None


def google_checkpoint(directory: str) -> bool:
    """A Google model.ckpt* checkpoint in `directory` (a SavedModel's variables are not one)."""
    prefix = google_checkpoint_prefix(directory)
    return bool(prefix) and not prefix.endswith(os.path.join("variables", "variables"))


def pretrained_kind(path) -> str:
    """'google' or 'huggingface': which published layout the directory `path` holds.

    Google: albert_config.json (also under assets/, as TF-Hub modules keep it) or a
    model.ckpt* checkpoint. Hugging Face: config.json, model.safetensors or pytorch_model.bin.
    Anything else raises CheckpointError naming both layouts.
    """
    directory = os.fspath(path)
    if not os.path.isdir(directory):
        raise CheckpointError(f"checkpoint directory not found: {directory}")
    if google_config_path(directory) or google_checkpoint(directory):
        return "google"
    if any(os.path.exists(os.path.join(directory, name))
           for name in ("config.json", SAFETENSORS_NAME, PYTORCH_NAME)):
        return "huggingface"
    raise CheckpointError(
        f"{directory} is neither a Hugging Face ALBERT directory (config.json with "
        f"{SAFETENSORS_NAME} or {PYTORCH_NAME}) nor a Google ALBERT directory "
        f"({GOOGLE_CONFIG_NAME} with model.ckpt-*.index or a TF-Hub variables/ folder)"
    )


def vocabulary_file(path) -> str | None:
    """The SentencePiece model that comes with a model directory, or None.

    Looks for spiece.model (Hugging Face, our exports) and 30k-clean.model (Google), Google's
    name first in a Google directory, in the directory, its assets/ (TF-Hub modules, our
    SavedModels) and its final/ (a trainer checkpoint directory's last export). A checkpoint
    prefix is looked up in its directory.
    """
    directory = os.fspath(path)
    if not os.path.isdir(directory):
        if not os.path.isfile(directory + ".index"):
            return None
        directory = os.path.dirname(directory) or "."
    names = (HF_VOCAB_NAME, GOOGLE_VOCAB_NAME)
    if google_config_path(directory):
        names = names[::-1]
    for folder in (directory, os.path.join(directory, "assets"), os.path.join(directory, "final")):
        for name in names:
            candidate = os.path.join(folder, name)
            if os.path.isfile(candidate):
                return candidate
    return None
