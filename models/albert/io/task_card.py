"""What an exported model carries besides its weights: the task card.

A fine-tuned model is only usable as it was trained: the same windows (max_seq_length,
doc_stride, max_query_length), the same labels in the same order, the same vocabulary. Exports
carry them in TASK_FILE (beside a Hugging Face export's config.json, and among a SavedModel's
assets), and the serving tools take them from there. The card is a file format, so it lives with
the other formats in io, below the training code that records it and the tools that read it.
Plain JSON: no TensorFlow, so a serving tool answers a flag that disagrees with the model at once.
"""

from __future__ import annotations

import json
import os

from albert.errors import CheckpointError
from albert.io.run_record import Record, RunRecord
from albert.model.heads import TASKS, task_name

TASK_FILE = "albert_task.json"


# The feature settings a serving tool reads as whole numbers.
WHOLE_NUMBERS = ("max_seq_length", "doc_stride", "max_query_length")


def task_card(spec: dict) -> dict:
    """What serving needs to know of a fine-tuning run's recorded spec (run.json's "spec")."""
    return {"task": spec.get("task"), "features": spec.get("features") or {},
            "labels": spec.get("labels"), "vocabulary_sha256": spec.get("vocabulary_sha256")}


def write_task_card(directory: str, card: dict) -> str:
    """TASK_FILE in `directory`; returns its path (a SavedModel takes it as an asset)."""
    path = os.path.join(directory, TASK_FILE)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(card, f, indent=2)
    return path


def read_task_card(path: str) -> dict | None:
    """The task card of a model: a SavedModel's assets, a Hugging Face export's directory, or a
    trainer checkpoint's run record (directory or prefix). None when it has none (a model from
    elsewhere, or exported before cards existed)."""
    directory = path if os.path.isdir(path) else os.path.dirname(os.path.abspath(path))
    for candidate in (os.path.join(directory, "assets", TASK_FILE),
                      os.path.join(directory, TASK_FILE)):
        if not os.path.isfile(candidate):
            continue
        try:
            with open(candidate, "rb") as f:
                found = json.loads(f.read().decode("utf-8"))
        except UnicodeDecodeError as e:
            raise CheckpointError(f"{candidate} (of the model {path}) is not UTF-8 JSON: byte "
                                  f"{e.object[e.start]:#04x} at offset {e.start} "
                                  f"({e.reason})") from None
        except (OSError, json.JSONDecodeError) as e:
            raise CheckpointError(f"{candidate} (of the model {path}) is unreadable "
                                  f"({e})") from None
        if not isinstance(found, dict):
            raise CheckpointError(f"{candidate} (of the model {path}) does not hold a JSON "
                                  "object")
        return check_card(found, f"{candidate} (of the model {path})")
    record = RunRecord(directory)
    spec = (record.load(advice=f"it is the run record of the model {path}") or Record()).spec
    if not spec:
        return None
    return check_card(task_card(spec), f"{record.path} (of the model {path})")


def _kind(value) -> str:
    """A JSON value's type as a message names it."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"the boolean {str(value).lower()}"
    if isinstance(value, str):
        return f"the string {json.dumps(value)[:40]}"
    if isinstance(value, int | float):
        return f"the number {value}"
    return "a list" if isinstance(value, list) else "an object"


def check_card(card: dict, where: str) -> dict:
    """`card` when each entry it holds has the type the serving tools read it as; else one
    CheckpointError naming `where` and the entry (valid JSON of the wrong shape, e.g. labels
    "abcd", would otherwise be read as four labels, or fail deep in a tool as a traceback)."""
    def refuse(entry: str, expected: str, value):
        raise CheckpointError(f"{where}: {entry} must be {expected}, got {_kind(value)}")

    for name in ("task", "vocabulary_sha256"):
        if card.get(name) is not None and not isinstance(card[name], str):
            refuse(f'"{name}"', "a string", card[name])
    features = card.get("features")
    if features is not None and not isinstance(features, dict):
        refuse('"features"', "a JSON object of feature settings", features)
    for name in WHOLE_NUMBERS:
        value = (features or {}).get(name)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)
                                  or value < 1):
            refuse(f'"features" "{name}"', "a positive whole number", value)
    columns = (features or {}).get("columns")
    if columns is not None and not isinstance(columns, list):
        refuse('"features" "columns"', "a list", columns)
    labels = card.get("labels")
    if labels is not None:
        if not isinstance(labels, list) or not all(isinstance(x, str) and x for x in labels):
            refuse('"labels"', "a list of label names in id order", labels)
        if len(set(labels)) != len(labels):
            raise CheckpointError(f"{where}: \"labels\" names a label twice: {labels}")
    return card


def card_misfit(card: dict, model, vocabulary_sha256: str | None = None) -> str | None:
    """Why `card` does not describe `model` (a card left beside another model), or None when
    it may: a card of another task's model, a regression card on a classifier (or the reverse),
    labels of another number than the classifier's outputs, or (vocabulary_sha256 given: the
    vocabulary saved with the model) another vocabulary than the card's."""
    task = card.get("task")
    # The model class the card's task is served by (albert.model.heads; "regression" is a
    # classifier's).
    expected = TASKS[task_name(task)].model if task_name(task) in TASKS else None
    if expected and expected not in {c.__name__ for c in type(model).__mro__}:
        return f"it is the card of a {task} model, not of an {type(model).__name__}"
    outputs = getattr(model, "num_labels", None)
    if task == "regression" and outputs != 1:
        return f"it is the card of a regression model, not of a {outputs}-label classifier"
    if task == "classification" and outputs == 1:
        return "it is the card of a classifier, not of a regression model"
    labels = card.get("labels")
    if task == "classification" and isinstance(labels, list) and len(labels) != outputs:
        return f"it names {len(labels)} labels for a classifier with {outputs} outputs"
    recorded = card.get("vocabulary_sha256")
    if vocabulary_sha256 and recorded and recorded != vocabulary_sha256:
        return "it records another vocabulary than the one saved with the model"
    return None
