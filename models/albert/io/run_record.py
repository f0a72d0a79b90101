"""The run record, run.json in a run directory (--checkpoint_dir): what the run was started from,
its XLA and batch plans, its spec, its step, whether it finished and its best evaluation. This
module is the one that reads and writes it; albert.train.run_dir decides what goes in it when a run
starts, albert.tasks.runner when it evaluates and ends, and albert.io.task_card reads a fine-tuned
model's card from it.
"""

from __future__ import annotations

import json
import os

from albert.errors import CheckpointError

RUN_RECORD = "run.json"

# The record's entries that a resume reads, and their JSON types (bool before int: a bool is an
# int to Python, not to a record).
_OBJECT_ENTRIES = ("spec", "started_from", "xla", "batch_plan", "best", "versions")
_OTHER_ENTRIES = {"bias_correction": (bool,), "finished": (bool,), "step": (int,),
                  "total_steps": (int,), "labels": (list, type(None)), "task": (str,)}


class RunRecord:
    """run.json of the run directory `directory`. Only rank 0 writes it (the callers see to
    that: the run directory is rank 0's)."""

    def __init__(self, directory: str):
        self.directory = directory
        self.path = os.path.join(directory, RUN_RECORD)

    def read(self, advice: str = "use a new --checkpoint_dir or --overwrite_checkpoint_dir"
             ) -> dict | None:
        """The record; None when there is none yet. A garbled one is an error (ending with
        `advice`), not "no run": starting over would silently forget what the directory holds."""
        if not os.path.exists(self.path):
            return None
        try:
            with open(self.path, encoding="utf-8") as f:
                record = json.load(f)
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
            raise CheckpointError(f"{self.path} is unreadable ({e}); {advice}") from None
        wrong = shape_error(record)
        if wrong:
            # Read before any training: a wrong shape met later (the best score after the last
            # update) would be a traceback with the export and the summary lost.
            raise CheckpointError(f"{self.path} is not a run record: {wrong}; {advice}")
        return record

    def write(self, record: dict) -> None:
        """Replace the record in one rename, so a crash leaves the old record or the new, never
        half of one."""
        os.makedirs(self.directory, exist_ok=True)
        with open(self.path + ".tmp", "w", encoding="utf-8") as f:
            json.dump(record, f, indent=2)
        os.replace(self.path + ".tmp", self.path)

    def update(self, **entries) -> dict:
        """The record with `entries` replaced (a record is made when there is none); returns
        it."""
        record = {**(self.read() or {}), **entries}
        self.write(record)
        return record

    def remove(self) -> None:
        if os.path.exists(self.path):
            os.remove(self.path)

    def best(self) -> dict | None:
        """The best evaluation --keep_best kept: {"metric", "value", "step", ...}; None if none."""
        return (self.read() or {}).get("best")


def _kind(value) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean",
            type(None): "null"}.get(type(value), "a number")


def _number(value) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def shape_error(record) -> str | None:
    """What makes valid JSON no run record this version can read, in words (None: nothing)."""
    if not isinstance(record, dict):
        return f"it holds {_kind(record)}, expected an object"
    for name in _OBJECT_ENTRIES:
        if name in record and not isinstance(record[name], dict):
            return f"its {name!r} is {_kind(record[name])}, expected an object"
    for name, types in _OTHER_ENTRIES.items():
        value = record.get(name)
        if name in record and (not isinstance(value, types)
                               or (bool not in types and isinstance(value, bool))):
            return f"its {name!r} is {_kind(value)}, expected {_kind(types[0]())}"
    spec = record.get("spec") or {}
    for name in ("started_from", "features", "model_config"):
        if name in spec and not isinstance(spec[name], dict | type(None)):
            return f"its spec.{name} is {_kind(spec[name])}, expected an object"
    if "bias_correction" in spec and not isinstance(spec["bias_correction"], bool):
        return f"its spec.bias_correction is {_kind(spec['bias_correction'])}, expected a boolean"
    xla = record.get("xla")
    if xla is not None and not (all(isinstance(xla.get(k), bool) for k in ("gradient", "update"))
                                and isinstance(xla.get("reason"), str)):
        return (f"its xla is {json.dumps(xla)[:120]}, expected true/false 'gradient' and "
                "'update' and a 'reason'")
    best = record.get("best")
    if best is not None:
        if not isinstance(best.get("metric"), str) or not _number(best.get("value")) \
                or not isinstance(best.get("step"), int):
            return (f"its best is {json.dumps(best)[:120]}, expected a metric's name, a "
                    "numeric value and a step")
    return None
