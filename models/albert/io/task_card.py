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

TASK_FILE = "albert_task.json"


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
                      os.path.join(directory, TASK_FILE), os.path.join(directory, "run.json")):
        if not os.path.isfile(candidate):
            continue
        try:
            with open(candidate, encoding="utf-8") as f:
                found = json.load(f)
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
            raise CheckpointError(f"{candidate} (of the model {path}) is unreadable "
                                  f"({e})") from None
        if not isinstance(found, dict):
            raise CheckpointError(f"{candidate} (of the model {path}) does not hold a JSON "
                                  "object")
        if candidate.endswith("run.json"):
            return task_card(found["spec"]) if found.get("spec") else None
        return found
    return None
