"""The model a directory holds, loaded and saved: the entry points `albert` exports.

Three layouts are read, told apart by their files (what a directory holds, without TensorFlow,
is io.model_dir's):
- a Hugging Face ALBERT directory (io.huggingface): config.json with model.safetensors or
  pytorch_model.bin;
- a Google ALBERT release (io.google_tf1): albert_config.json with a TF1 checkpoint;
- a trainer checkpoint: a tf.train.Checkpoint prefix (or a directory of them) with the model
  under `model/` and config.json beside it, as albert.train.checkpoint_store writes them.

`load_pretrained` reads the first two (a released model to start from); `load_model` all three,
and insists on every weight of the class asked for. `save_pretrained` writes the first into a
directory as transformers does, each file atomically, leaving the directory's other files;
`replace_pretrained` writes it as a whole new directory that replaces the old one (albert.fs),
for the directories the toolkit owns. The model classes come in as arguments: this module never
imports albert.model.modeling.
"""

from __future__ import annotations

import json
import logging
import os
import re

import tensorflow as tf

from albert.data.tokenization import load_spm, vocab_checksum
from albert.errors import (  # CheckpointError importable from here too
    CheckpointError,
    DataError,
    OutputError,
)
from albert.fs import staged_directory, staged_files
from albert.io.google_tf1 import load_google
from albert.io.huggingface import (
    HF_VOCAB_NAME,
    PYTORCH_NAME,
    SAFETENSORS_NAME,
    load_huggingface,
    write_huggingface,
)
from albert.io.model_dir import google_checkpoint, google_config_path, pretrained_kind
from albert.io.task_card import TASK_FILE, card_misfit
from albert.io.weights import check_vocabulary
from albert.model.config import AlbertConfig

__all__ = ["CheckpointError", "load_model", "load_pretrained", "replace_pretrained",
           "save_pretrained"]

logger = logging.getLogger(__name__)

# Tokenizer files a directory may hold beside spiece.model that a new vocabulary makes stale
# and write_tokenizer_files does not write (it writes spiece.model, tokenizer.json and
# tokenizer_config.json): SentencePiece's piece list, transformers' special and added tokens.
STALE_WITH_A_NEW_VOCABULARY = ("spiece.vocab", "special_tokens_map.json", "added_tokens.json")


# -- loading --------------------------------------------------------------------------------------


def load_pretrained(cls, path, config: AlbertConfig | None = None, require_heads: bool = False,
                    **options):
    """Build `cls` from a local Hugging Face or Google ALBERT directory and load its weights.

    The layout is detected by its files (pretrained_kind). Heads the checkpoint lacks (a QA head
    when starting from a pretraining checkpoint) keep their fresh initialisation and are logged,
    or raise CheckpointError with require_heads; a missing backbone tensor or a shape mismatch
    is always an error. options: num_labels / label_names of a sequence classifier (see
    the class's head_options).
    """
    directory = os.fspath(path)
    if pretrained_kind(directory) == "google":
        return load_google(cls, directory, config, require_heads, options=options)
    return load_huggingface(cls, directory, config, require_heads, options)


def _training_checkpoint(path: str) -> str | None:
    """The tf.train checkpoint prefix `path` names, or None when it is not a trainer checkpoint.

    A prefix, or a directory of ckpt-<step> files: the latest its `checkpoint` index names, else
    (index missing or stale) the highest step present.
    """
    if os.path.isfile(path + ".index"):
        directory = os.path.dirname(path) or "."
        return None if google_config_path(directory) else path
    if not os.path.isdir(path) or google_config_path(path):
        return None
    if any(os.path.exists(os.path.join(path, n)) for n in (SAFETENSORS_NAME, PYTORCH_NAME)):
        return None
    steps = [int(m.group(1)) for m in (re.fullmatch(r"ckpt-(\d+)\.index", n)
                                       for n in os.listdir(path)) if m]
    if not steps and not os.path.exists(os.path.join(path, "checkpoint")):
        return None
    latest = tf.train.latest_checkpoint(path)
    if latest is None or not os.path.isfile(latest + ".index"):
        if not steps:
            raise CheckpointError(f"{path}/checkpoint lists no checkpoint that exists")
        latest = os.path.join(path, f"ckpt-{max(steps)}")
    return latest


def load_model(cls, path, **options):
    """`cls` from a trainer checkpoint (prefix or directory), a Hugging Face or a Google ALBERT
    directory, with every weight of `cls` (task head included) taken from it.

    For export and inference: a checkpoint that lacks the head (a pretraining checkpoint loaded
    as a QA model) raises CheckpointError instead of serving fresh random weights. options:
    num_labels / label_names of a sequence classifier (see the class's head_options).
    """
    path = os.fspath(path).rstrip("/") or "/"
    if not os.path.exists(path) and not os.path.isfile(path + ".index"):
        raise CheckpointError(f"checkpoint not found: {path}")
    if os.path.isfile(path + ".index"):
        directory = os.path.dirname(path) or "."
        if google_config_path(directory):
            return load_google(cls, directory, None, True, prefix=path, options=options)
    prefix = _training_checkpoint(path)
    if prefix is None:
        return load_pretrained(cls, path, require_heads=True, **options)
    directory = os.path.dirname(prefix) or "."
    config_path = os.path.join(directory, "config.json")
    if not os.path.exists(config_path):
        raise CheckpointError(f"{directory} has no config.json beside checkpoint {prefix}")
    try:
        bias_shape = dict(tf.train.list_variables(prefix)).get(
            "model/classifier/bias/.ATTRIBUTES/VARIABLE_VALUE")
    except (tf.errors.OpError, ValueError) as e:
        raise CheckpointError(f"cannot read checkpoint {prefix}: "
                              f"{str(e).splitlines()[0][:300]}") from None
    model = cls(AlbertConfig.from_json_file(config_path),
                **cls.head_options(prefix, options,
                                   None if bias_shape is None else int(bias_shape[0]), None))
    model.build_for_config()
    try:
        status = tf.train.Checkpoint(model=model).read(prefix)
        status.expect_partial()
        status.assert_existing_objects_matched()
    except AssertionError as e:
        missing = sorted(set(re.findall(r"path=([^,]+),", str(e))))
        raise CheckpointError(
            f"checkpoint {prefix} lacks weights the {cls.__name__} model needs ("
            f"{', '.join(missing[:4]) or str(e)[:200]}): it was saved from another kind of model"
        ) from None
    except (tf.errors.OpError, ValueError) as e:
        raise CheckpointError(f"cannot read checkpoint {prefix}: "
                              f"{str(e).splitlines()[0][:300]}") from None
    return model


# -- saving ---------------------------------------------------------------------------------------


def save_pretrained(model, path, spm_model: str | None = None,
                    extra_json: dict | None = None) -> None:
    """Write config.json + model.safetensors (+ the tokenizer files of spm_model) into the
    directory `path` so transformers can load it; extra_json: {file name: object} written beside
    them (a fine-tune's task card).

    As transformers' save_pretrained: `path` is created if missing, and every file of it that
    is not one of these stays (a project's own files; the vocabulary and task card of the model
    it was loaded from, when saved back without spm_model). Each file is replaced in one rename
    (albert.fs.staged_files), config.json last: an interrupted save leaves every earlier file
    whole. Checked before anything is written: a vocabulary (given, or already in `path`) whose
    size is not the model's vocab_size. A task card in `path` that does not describe this model
    (another task's, another vocabulary's) is removed with a warning.
    """
    directory = os.fspath(path)
    remove = _stale_files(model, directory, spm_model, extra_json)
    with staged_files(directory, last=("config.json",), remove=remove) as staged:
        write_huggingface(model, staged, spm_model=spm_model, extra_json=extra_json)


def replace_pretrained(model, path, spm_model: str | None = None,
                       extra_json: dict | None = None) -> None:
    """save_pretrained's files as a whole new directory that replaces `path`: for the
    directories the toolkit owns (a run's final/ and best/), where nothing else belongs and a
    reader must see the old export or the new one, never a mix.

    Written to a temporary sibling directory that then replaces `path` (albert.fs), so an
    interrupted save never leaves a half-written checkpoint under `path`, nor a missing one
    where a checkpoint was.
    """
    if spm_model:
        _check_vocabulary(model, spm_model)
    with staged_directory(os.fspath(path)) as staged:
        write_huggingface(model, staged, spm_model=spm_model, extra_json=extra_json)


def _check_vocabulary(model, spm_model: str) -> None:
    # transformers would load the pair and fail on the first id past the embedding table.
    check_vocabulary(model.config, load_spm(spm_model).GetPieceSize(), spm_model)


def _stale_files(model, directory: str, spm_model: str | None,
                 extra_json: dict | None) -> tuple[str, ...]:
    """The checks before save_pretrained writes into `directory`, and the names of its files
    that the save makes stale (to remove once the new files are in)."""
    if os.path.isdir(directory) and (google_config_path(directory)
                                     or google_checkpoint(directory)):
        # pretrained_kind reads a Google layout first: the old checkpoint would still load.
        raise OutputError(f"{directory} holds a Google ALBERT checkpoint (albert_config.json or "
                          "model.ckpt*), which from_pretrained would load instead of the saved "
                          "model: save into another directory")
    present = os.path.join(directory, HF_VOCAB_NAME)
    stale = []
    if spm_model:
        _check_vocabulary(model, spm_model)
        if os.path.isfile(present) and vocab_checksum(present) != vocab_checksum(spm_model):
            stale += [n for n in STALE_WITH_A_NEW_VOCABULARY
                      if os.path.isfile(os.path.join(directory, n))]
    elif os.path.isfile(present):
        try:
            pieces = load_spm(present).GetPieceSize()
        except DataError:
            pieces = None  # not a vocabulary: loading the directory says so
        if pieces is not None:
            # It would be this model's vocabulary after the save.
            check_vocabulary(model.config, pieces, present)
    card_path = os.path.join(directory, TASK_FILE)
    if TASK_FILE not in (extra_json or {}) and os.path.isfile(card_path):
        try:
            with open(card_path, encoding="utf-8") as f:
                card = json.load(f)
        except (OSError, UnicodeDecodeError, json.JSONDecodeError):
            card = None  # unreadable: reading the model's card says so, naming it
        why = card_misfit(card, model, vocab_checksum(spm_model) if spm_model else None) \
            if isinstance(card, dict) else None
        if why:
            logger.warning("removing %s from %s: %s", TASK_FILE, directory, why)
            stale.append(TASK_FILE)
    return tuple(stale)
