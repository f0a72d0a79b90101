"""What the tools that ask a fine-tuned model share (albert.answer, albert.classify): its task
card read without TensorFlow, feature flags settled against the card, the vocabulary checked by
content, and the --output file checked before any inference.

A model is only usable as it was fine-tuned: the same windows, labels and vocabulary. A flag left
out takes the model's setting; a flag that differs is an error, never a silent change; inference
knobs (batch size, n-best) are free.
"""

from __future__ import annotations

import json
import os
import shlex
import sys

from albert.cli.flags import FlagError, as_flags
from albert.io.task_card import read_task_card
from albert.train import run_spec
from albert.train.run_spec import file_sha256


def read_card(path: str) -> dict | None:
    """The model's task card (io.task_card.read_task_card), a damaged one as a flag error."""
    try:
        return read_task_card(path)
    except ValueError as e:
        raise FlagError(f"--checkpoint_path {path}: {e}") from None


def settle(flags: dict, card: dict | None, defaults: dict, model: str) -> dict:
    """albert.train.run_spec.settle, its refusal as a flag error."""
    try:
        return run_spec.settle(flags, card, defaults, f"--checkpoint_path {model}")
    except ValueError as e:
        raise FlagError(as_flags(e)) from None


def check_vocabulary_content(card: dict | None, spm_model: str, model: str) -> None:
    """Refuse a vocabulary whose content is not the one the model was fine-tuned with (same
    size, other pieces: valid ids, wrong tokens)."""
    checksum = (card or {}).get("vocabulary_sha256")
    if checksum and file_sha256(spm_model) != checksum:
        raise FlagError(f"the vocabulary {spm_model} is not the one --checkpoint_path {model} was "
                        "fine-tuned with (its content differs): drop --spm_model, or give that "
                        "one")


def check_output_file(path: str, example: str) -> None:
    """--output, checked before the model runs (found afterwards, a directory there cost all of
    the inference). `example`: a file name to suggest."""
    if os.path.isdir(path):
        raise FlagError(f"--output {path} is a directory: give a file name for the JSON lines, "
                        f"e.g. {shlex.quote(os.path.join(path, example))}")
    parent = os.path.dirname(os.path.abspath(path))
    while not os.path.lexists(parent):
        parent = os.path.dirname(parent)
    if not os.path.isdir(parent):
        raise FlagError(f"--output {path} lies under the file {parent}: give a path in a "
                        "directory")


def write_jsonl(rows: list[dict], path: str | None) -> None:
    """JSON lines to `path` (written to a temporary name, then renamed: a reader never sees
    half a file) or to stdout."""
    text = "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)
    if path is None:
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path + ".tmp", "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(path + ".tmp", path)
