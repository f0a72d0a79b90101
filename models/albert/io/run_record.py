"""The run record, run.json in a run directory (--checkpoint_dir): what the run was started from,
its XLA and batch plans, its spec, its step, whether it finished and its best evaluation. This
module is the one that knows its entries (Record) and reads and writes it (RunRecord);
albert.train.run_dir decides what goes in it when a run starts, albert.tasks.runner when it
evaluates and ends, and albert.io.task_card reads a fine-tuned model's card from it.

The layouts released versions wrote, all read by Record.from_json:
  pre-spec       started_from, xla, batch_plan, total_steps, finished, step (and a fine-tune's
                 train_file, task, labels); no bias_correction: Adam's moments were uncorrected
  pre-spec+bc    the same with a top-level bias_correction
  spec           the same with the run's identity under "spec" (and the command and versions);
                 "task" and "labels" were also written beside it
  spec, no start a spec whose record lacks the top-level started_from (the spec's holds it)
  current        the spec holds the task and labels once; "best" names its evaluation file
"""

from __future__ import annotations

import dataclasses
import json
import os

from albert.errors import CheckpointError

RUN_RECORD = "run.json"

# Every entry a record holds, and what each must be: a hand-edited run.json of another shape is
# refused when read, in one line, instead of failing later (after training) with a traceback.
_OBJECT_ENTRIES = ("spec", "started_from", "xla", "batch_plan", "best", "versions")


def _integer(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)  # True is an int to Python


def _strings(value) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


_OTHER_ENTRIES = {
    "bias_correction": (lambda v: isinstance(v, bool), "a boolean"),
    "finished": (lambda v: isinstance(v, bool), "a boolean"),
    "step": (_integer, "an integer"),
    "total_steps": (_integer, "an integer"),
    "labels": (lambda v: v is None or _strings(v), "a list of strings or null"),
    "task": (lambda v: isinstance(v, str), "a string"),
    "command": (_strings, "a list of strings"),
}
RECORD_ENTRIES = (*_OBJECT_ENTRIES, *_OTHER_ENTRIES)
_BATCH_PLAN = ("ranks", "micro_batch", "accumulation", "global_batch")


@dataclasses.dataclass
class Record:
    """run.json's entries (see the module docstring for the layouts). None: not recorded.
    `extra` keeps the entries this version does not know (a newer version's, or an old
    fine-tune's train_file), written back as they were."""
    started_from: dict | None = None
    spec: dict | None = None
    xla: dict | None = None
    batch_plan: dict | None = None
    total_steps: int | None = None
    step: int | None = None
    finished: bool | None = None
    best: dict | None = None
    command: list | None = None
    versions: dict | None = None
    # Only a record written before run specs holds these: a spec records them itself.
    bias_correction: bool | None = None
    task: str | None = None
    labels: list | None = None
    extra: dict = dataclasses.field(default_factory=dict)

    @classmethod
    def from_json(cls, data: dict) -> Record:
        """The record of run.json's (checked: shape_error) object, of any layout."""
        known = {f.name for f in dataclasses.fields(cls)} - {"extra"}
        record = cls(**{k: v for k, v in data.items() if k in known},
                     extra={k: v for k, v in data.items() if k not in known})
        # Written beside the spec too by the versions that stored them twice: the spec's count.
        if "task" in (record.spec or {}):
            record.task = None
        if "labels" in (record.spec or {}):
            record.labels = None
        return record

    def to_json(self) -> dict:
        entries = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)
                   if f.name != "extra" and getattr(self, f.name) is not None}
        return {**self.extra, **entries}

    def merged(self, newer: Record) -> Record:
        """This record with every entry `newer` records replaced."""
        return Record.from_json({**self.to_json(), **newer.to_json()})

    @property
    def start(self) -> dict | None:
        """Where the run began: a record without its own entry (written by hand, or cut short)
        still says in its spec."""
        return self.started_from or (self.spec or {}).get("started_from")

    @property
    def run_task(self) -> str | None:
        return (self.spec or {}).get("task", self.task)

    @property
    def run_labels(self) -> list | None:
        """A classifier's labels in id order (None: none recorded)."""
        return (self.spec or {}).get("labels", self.labels)


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
        """Replace the record in one rename, so a crash (or a full disk) leaves the old record or
        the new, never half of one: the new one is written whole and synced beside it first."""
        os.makedirs(self.directory, exist_ok=True)
        # Beside the record, so the rename stays on one filesystem; open() makes it with the
        # umask's mode, as the record would have been made.
        temporary = self.path + ".tmp"
        try:
            with open(temporary, "w", encoding="utf-8") as f:
                json.dump(record, f, indent=2)
                f.flush()
                os.fsync(f.fileno())
            os.replace(temporary, self.path)
        except BaseException:
            if os.path.exists(temporary):
                os.remove(temporary)
            raise
        _sync_directory(self.directory)

    def load(self, advice: str = "use a new --checkpoint_dir or --overwrite_checkpoint_dir"
             ) -> Record | None:
        """The record as a Record (read's checks and errors); None when there is none yet."""
        data = self.read(advice)
        return None if data is None else Record.from_json(data)

    def save(self, record: Record) -> None:
        self.write(record.to_json())

    def update(self, **entries) -> Record:
        """The record with `entries` (Record's fields) replaced (a record is made when there is
        none); returns it."""
        record = dataclasses.replace(self.load() or Record(), **entries)
        self.save(record)
        return record

    def remove(self) -> None:
        if os.path.exists(self.path):
            os.remove(self.path)

    def best(self) -> dict | None:
        """The best evaluation --keep_best kept: {"metric", "value", "step", ...}; None if none."""
        return (self.load() or Record()).best


def _sync_directory(directory: str) -> None:
    """Make a rename in `directory` survive a power cut (where the filesystem can say so)."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass  # some filesystems cannot sync a directory; the rename is still atomic
    finally:
        os.close(fd)


def _kind(value) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean",
            int: "an integer", type(None): "null"}.get(type(value), "a number")


def _show(value) -> str:
    text = json.dumps(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _number(value) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def shape_error(record) -> str | None:
    """What makes valid JSON no run record this version can read, in words (None: nothing)."""
    if not isinstance(record, dict):
        return f"it holds {_kind(record)}, expected an object"
    for name in _OBJECT_ENTRIES:
        if name in record and not isinstance(record[name], dict):
            return f"its {name!r} is {_kind(record[name])}, expected an object"
    for name, (fits, expected) in _OTHER_ENTRIES.items():
        if name in record and not fits(record[name]):
            return (f"its {name!r} is {_kind(record[name])} ({_show(record[name])}), "
                    f"expected {expected}")
    plan = record.get("batch_plan") or {}
    for name in _BATCH_PLAN:
        if name in plan and not _integer(plan[name]):
            return (f"its batch_plan.{name} is {_kind(plan[name])} ({_show(plan[name])}), "
                    "expected an integer")
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
