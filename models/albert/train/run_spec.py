"""What a run is: everything that decides its trajectory, resolved once, recorded whole in its
run record (run.json) and checked when the run resumes.

A resume continues a run only if the command describes the same run: the same model config and
start, data, vocabulary (by content), task and feature settings, labels in the same order, seed,
optimizer and schedule, global batch and precision. Anything else would silently mix two
experiments in one checkpoint directory (a learning rate that jumps mid-run, labels that swap ids).
What may differ on a resume: how the global batch is split into micro-batches, accumulation and
ranks (the update is the same; the input stream is replayed when the split changes), the XLA plan
(kept as recorded), logging and checkpoint frequencies, and --total_steps (logged with what it does
to the learning-rate schedule).
"""

from __future__ import annotations

import ast
import dataclasses
import enum
import hashlib
import importlib.metadata as md
import logging
import os
import re
import sys
import types
import typing
from dataclasses import dataclass, field

from albert.data.tokenization import load_spm
from albert.errors import AlbertError, CheckpointError, ConfigError, SettingError
from albert.io.run_record import Record
from albert.io.weights import check_vocabulary  # noqa: F401 (one check, re-exported)
from albert.model.config import PRESETS, AlbertConfig, check_field
from albert.train.batch_plan import resolve_batch_plan

logger = logging.getLogger("albert.train.run_spec")

# This toolkit's distribution: what pip installs, and what a run record names the version of.
TOOLKIT = "albert-tf"
# Spec entries a resume may change; everything else must match the recorded run.
MAY_CHANGE = frozenset({"total_steps"})
# Entries added to the spec since runs were first recorded: a record without one ran as this
# value (SQuAD windows were always padded to --max_seq_length before --padding).
LEGACY_VALUES = {"features.padding": "max"}


def file_sha256(path: str, _cache: dict = {}) -> str:  # noqa: B006 - a per-process memo
    """Content checksum of a (vocabulary) file, so two files of one name are told apart."""
    key = (os.path.realpath(path), os.path.getsize(path), os.path.getmtime(path))
    if key not in _cache:
        digest = hashlib.sha256()
        with open(path, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                digest.update(block)
        _cache[key] = digest.hexdigest()
    return _cache[key]


def data_files(paths) -> list[str]:
    """Training data as the record holds it: real paths and sizes (a changed or added file is a
    different run; hashing gigabytes of shards at every start would not pay)."""
    return [f"{os.path.realpath(p)} ({os.path.getsize(p)} bytes)" for p in sorted(paths)]


# A spec field made with run_field belongs to the run's identity: run.json's spec records it under
# `name` (default: the field's) as `record(value, owner)` (default: the value) and a resume
# compares it. identity() reads these declarations; nothing lists the fields by hand.
RUN_FIELD = "run_field"


def run_field(default=dataclasses.MISSING, *, default_factory=dataclasses.MISSING,
              name: str | None = None, record=None):
    """A spec field that belongs to the run's identity (see RUN_FIELD)."""
    return field(default=default, default_factory=default_factory,
                 metadata={RUN_FIELD: {"name": name, "record": record}})


def recorded_fields(obj) -> dict:
    """{name in run.json's spec: recorded value} of `obj`'s run fields (not nested)."""
    out = {}
    for f in dataclasses.fields(obj):
        declared = f.metadata.get(RUN_FIELD)
        if declared is None:
            continue
        value = getattr(obj, f.name)
        out[declared["name"] or f.name] = (declared["record"](value, obj) if declared["record"]
                                           else value)
    return out


# -- the typed spec -------------------------------------------------------------------------------
# Resolved once from the flags (albert.cli.resolve.resolve_spec, the one place that reads them), on
# rank 0, and handed to every rank (albert.tasks.runner.run); every module below the command-line
# tools takes these objects, never the flags.

@dataclass(frozen=True)
class ModelSource:
    """What the model starts from. load_from: scratch (a config from model_size / model_config
    and config_override), pretrained (a released model directory at checkpoint_path) or
    checkpoint (one of our runs' checkpoints: a prefix, or a directory's latest)."""
    load_from: str = "scratch"
    checkpoint_path: str | None = None
    load_optimizer_state: bool = False
    model_size: str = "base"
    model_config: str | None = None
    config_override: tuple[str, ...] = ()
    vocab_size: int | None = None

    @property
    def pretrained(self) -> bool:
        return self.load_from == "pretrained"

    def started_from(self) -> dict:
        """As the run record holds it (the model config is checked apart, against config.json)."""
        path = self.checkpoint_path
        return {"load_from": self.load_from,
                "checkpoint_path": os.path.realpath(path) if path else None,
                "load_optimizer_state": self.load_optimizer_state}


@dataclass(frozen=True)
class Optimization:
    """The optimizer and its learning-rate schedule. warmup_steps None: warmup_proportion of the
    updates."""
    optimizer: str = run_field("adamw")
    bias_correction: bool = run_field(True)
    # None: a training run's build settles it by the model's size, the one rule
    # (albert.tasks.Task.default_learning_rate), as a fine-tuner without --learning_rate does.
    learning_rate: float | None = run_field(None)
    end_learning_rate: float = run_field(0.0)
    lr_decay: str = run_field("from_warmup")
    decay_power: float = run_field(1.0)
    warmup_steps: int | None = run_field(0)
    # Recorded as given: a proportion of --total_steps only when no --warmup_steps, so raising
    # --total_steps does not read as another warmup.
    warmup_proportion: float | None = run_field(
        None, record=lambda value, o: value if o.warmup_steps is None else None)
    weight_decay: float = run_field(0.01)
    max_grad_norm: float = run_field(1.0)

    def warmup(self, total_steps: int) -> int:
        if self.warmup_steps is not None:
            return self.warmup_steps
        return int((self.warmup_proportion or 0.0) * total_steps)


@dataclass(frozen=True)
class Batching:
    """How the global batch is asked for (train.batch_plan resolves it for a rank count), and what
    decides the memory (recompute, the budget for a micro-batch of "auto")."""
    per_gpu_batch_size: int | str | None = None
    global_batch_size: int | None = None
    gradient_accumulation_steps: int | None = None
    default_micro_batch: int = 32
    memory_budget_gb: float | None = None
    recompute: str = "none"

    @property
    def auto(self) -> bool:
        return self.per_gpu_batch_size == "auto"

    def plan(self, ranks: int):
        """The BatchPlan for `ranks` processes (PlanError, a SettingError, naming the settings
        that disagree)."""
        if self.auto:
            raise SettingError("{per_gpu_batch_size} auto has to be resolved "
                               "(albert.train.memory) before the batch plan",
                               "per_gpu_batch_size")
        return resolve_batch_plan(ranks, self.per_gpu_batch_size, self.global_batch_size,
                                  self.gradient_accumulation_steps, self.default_micro_batch)

    def chosen(self, micro_batch: int, accumulation: int) -> Batching:
        """This request with --per_gpu_batch_size auto decided."""
        return dataclasses.replace(self, per_gpu_batch_size=micro_batch,
                                   gradient_accumulation_steps=accumulation)


@dataclass(frozen=True)
class Execution:
    precision: str = run_field("fp32")
    fp16_allreduce: bool = run_field(False)
    xla: str = "auto"  # auto | on | off (--skip_xla is off)
    eager: bool = False
    seed: int = run_field(42)


@dataclass(frozen=True)
class Outputs:
    """Where a run keeps its state and results, and how often."""
    checkpoint_dir: str | None = None  # the command's --checkpoint_dir default (cli.flags)
    overwrite_checkpoint_dir: bool = False
    keep_checkpoints: int = 5
    checkpoint_frequency: int = 1000
    log_dir: str | None = None
    log_frequency: int = 10
    progress: bool = True
    output_dir: str | None = None
    cache_dir: str | None = None
    export_dir: str | None = None
    eval_frequency: int = 0
    keep_best: str | None = None


# -- a task's own settings ------------------------------------------------------------------------
# Each task declares its settings as a frozen dataclass extending TaskOptions (albert.tasks.*:
# PretrainingOptions, SquadOptions, ClassifierOptions). A field made with identity_field belongs to
# the run's identity: run.json records it (under the spec's "features", as it always has; a
# classifier's labels beside them) and a resume compares it; every other field may change.

IDENTITY = "identity"  # the field metadata key: where the identity records the field
_OPTIONS: dict[str, type] = {}  # TaskOptions subclasses by name


def identity_field(default=dataclasses.MISSING, *, under: str = "features", record=None):
    """A task option that belongs to the run's identity, recorded in run.json's spec `under`
    "features" (or "labels") as `record(value)` (default: the value itself)."""
    return field(default=default, metadata={IDENTITY: under, "record": record})


@dataclass(frozen=True, kw_only=True)
class TaskOptions:
    """What every task has: the sequence length it trains and predicts at."""
    max_seq_length: int = identity_field()

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        _OPTIONS[cls.__name__] = cls  # RunSpec.from_dict finds a task's options by class name

    def identity(self) -> dict:
        """The identity fields as run.json's spec holds them: {"features": {...}, "labels": ...}
        (labels None: the task has none)."""
        out = {"features": {}, "labels": None}
        for f in dataclasses.fields(self):
            under = f.metadata.get(IDENTITY)
            if under is None:
                continue
            value = getattr(self, f.name)
            if f.metadata["record"] is not None and value is not None:
                value = f.metadata["record"](value)
            if under == "features":
                out["features"][f.name] = value
            else:
                out[under] = value
        return out


@dataclass(frozen=True)
class Data:
    """A task's inputs by role (None: not given): train (a fine-tuner's training file, or
    pretraining's TFRecord directory, glob or comma list), eval (the labelled file a classifier
    scores), predict (the file SQuAD predicts and scores, or a classifier's unlabelled
    --test_file), val (pretraining's validation TFRecords)."""
    train: str | None = None
    eval: str | None = None
    predict: str | None = None
    val: str | None = None

    def files(self) -> list[str]:
        return [p for p in (self.train, self.eval, self.predict, self.val) if p]


@dataclass(frozen=True)
class RunSpec:
    """One run, whole: the task and its options (a TaskOptions: windows, labels in id order,
    columns, how it evaluates), data, vocabulary, model, optimizer and schedule, batching,
    execution and outputs."""
    task: str = run_field()
    options: TaskOptions
    model: ModelSource = run_field(default_factory=ModelSource, name="started_from",
                                   record=lambda model, _: model.started_from())
    vocabulary: str | None = run_field(None, name="vocabulary_sha256",
                                       record=lambda path, _: file_sha256(path) if path else None)
    data: Data = field(default_factory=Data)
    total_steps: int | None = None
    num_train_epochs: float | None = None
    optimization: Optimization = field(default_factory=Optimization)
    batching: Batching = field(default_factory=Batching)
    execution: Execution = field(default_factory=Execution)
    outputs: Outputs = field(default_factory=Outputs)
    plan_only: bool = False
    plan_ranks: int | None = None

    @property
    def trains(self) -> bool:
        return bool(self.data.train)

    def replace(self, **changes) -> RunSpec:
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict:
        """The spec as JSON-ready data (nested dicts, lists, strings, numbers, None); the task
        options as {"class": their class's name, "values": their fields}."""
        return _to_data(self)

    @classmethod
    def from_dict(cls, data: dict) -> RunSpec:
        """The spec to_dict gave (SpecError, one line naming the entry, for an unknown or a
        missing one, a value of another type, or options of a class not imported)."""
        return _from_data(cls, data, "spec")


class SpecError(AlbertError, ValueError):
    """A serialised run spec (RunSpec.from_dict) that does not describe a RunSpec."""


def _to_data(value):
    if isinstance(value, TaskOptions):
        return {"class": type(value).__name__,
                "values": {f.name: _to_data(getattr(value, f.name))
                           for f in dataclasses.fields(value)}}
    if dataclasses.is_dataclass(value):
        return {f.name: _to_data(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, enum.Enum):
        return _to_data(value.value)
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    if isinstance(value, list | tuple):
        return [_to_data(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _to_data(v) for k, v in value.items()}
    if value is None or isinstance(value, bool | int | float | str):
        return value
    raise SpecError(f"a run spec holds {value!r} ({type(value).__name__}), which has no JSON "
                    "form")


def _dataclass_from(cls, data, at: str):
    if not isinstance(data, dict):
        raise SpecError(f"{at}: expected an object for {cls.__name__}, got {data!r:.80}")
    fields = {f.name: f for f in dataclasses.fields(cls) if f.init}
    unknown = sorted(set(data) - set(fields))
    missing = sorted(set(fields) - set(data))
    if unknown or missing:
        raise SpecError(f"{at} ({cls.__name__}): "
                        + "; ".join(([f"unknown {', '.join(unknown)}"] if unknown else [])
                                    + ([f"missing {', '.join(missing)}"] if missing else [])))
    hints = typing.get_type_hints(cls, vars(sys.modules[cls.__module__]))
    return cls(**{name: _from_data(hints[name], data[name], f"{at}.{name}") for name in fields})


def _from_data(tp, data, at: str):
    """`data` (from _to_data) as the type `tp` declares."""
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin in (typing.Union, types.UnionType):
        if data is None and type(None) in args:
            return None
        errors = []
        for option in (a for a in args if a is not type(None)):
            try:
                return _from_data(option, data, at)
            except SpecError as e:
                errors.append(str(e))
        raise errors[0] if len(errors) == 1 else SpecError(
            f"{at}: {data!r:.80} is none of {' | '.join(map(_type_name, args))}")
    if tp is TaskOptions or (isinstance(tp, type) and issubclass(tp, TaskOptions)):
        return _options_from(data, at)
    if dataclasses.is_dataclass(tp):
        return _dataclass_from(tp, data, at)
    if origin is tuple:
        return _tuple_from(args, data, at)
    if origin in (list, dict):
        return _container_from(origin, args, data, at)
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        try:
            return tp(data)
        except ValueError:
            raise SpecError(f"{at}: {data!r:.80} is no {tp.__name__}") from None
    if isinstance(tp, type) and issubclass(tp, os.PathLike):
        if not isinstance(data, str):
            raise SpecError(f"{at}: expected a path string, got {data!r:.80}")
        return tp(data)
    if tp is float and isinstance(data, int) and not isinstance(data, bool):
        return float(data)  # JSON writes 1.0 as 1.0, but a hand-written 1 is the same rate
    if tp in (bool, int, float, str) and type(data) is tp:
        return data
    raise SpecError(f"{at}: expected {_type_name(tp)}, got {data!r:.80}")


def _options_from(data, at: str):
    """Task options as _to_data wrote them: their class's name and their fields."""
    if not isinstance(data, dict) or set(data) != {"class", "values"}:
        raise SpecError(f"{at}: expected {{\"class\": ..., \"values\": ...}} task options, "
                        f"got {data!r:.80}")
    if data["class"] not in _OPTIONS:
        raise SpecError(f"{at}: task options {data['class']!r} unknown here (known: "
                        f"{', '.join(sorted(_OPTIONS)) or 'none imported'})")
    return _dataclass_from(_OPTIONS[data["class"]], data["values"], at)


def _container_from(origin, members: tuple, data, at: str):
    if not isinstance(data, origin):
        raise SpecError(f"{at}: expected {_type_name(origin)}, got {data!r:.80}")
    if origin is list:
        return [_from_data(members[0], v, f"{at}[{i}]") for i, v in enumerate(data)] \
            if members else list(data)
    return {k: _from_data(members[1], v, f"{at}.{k}") for k, v in data.items()} \
        if members else dict(data)


def _tuple_from(members: tuple, data, at: str) -> tuple:
    if not isinstance(data, list):
        raise SpecError(f"{at}: expected a list, got {data!r:.80}")
    if len(members) == 2 and members[1] is Ellipsis:
        return tuple(_from_data(members[0], v, f"{at}[{i}]") for i, v in enumerate(data))
    if len(members) != len(data):
        raise SpecError(f"{at}: expected {len(members)} items, got {len(data)}")
    return tuple(_from_data(a, v, f"{at}[{i}]")
                 for i, (a, v) in enumerate(zip(members, data, strict=True)))


def _type_name(tp) -> str:
    return {type(None): "null", dict: "an object", list: "a list"}.get(
        tp, getattr(tp, "__name__", str(tp)))


def parse_override(item: str):
    """--config_override KEY=VALUE -> (key, checked value)."""
    if "=" not in item:
        raise SettingError(f"{{config_override}} expects KEY=VALUE, got {item!r}",
                           "config_override")
    key, raw = item.split("=", 1)
    key, raw = key.strip(), raw.strip()
    # config.json's spellings (true, false, null) mean what they mean there: as text, "false"
    # would be a truthy string. Other text that is no Python literal stays a string, which the
    # field check refuses wherever a number or a boolean belongs.
    words = {"true": True, "false": False, "null": None}
    if raw.lower() in words:
        value = words[raw.lower()]
    else:
        try:
            value = ast.literal_eval(raw)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            value = raw
    try:
        value = check_field(key, value)
    except ValueError as e:
        raise SettingError(f"{{config_override}} {key}={raw}: {e}", "config_override") from None
    return key, value


def model_config(source: ModelSource, vocabulary: str | None):
    """The config a new model gets: --model_config or --model_size, then the vocabulary's size
    (or --vocab_size) and --config_override."""
    if source.model_config:
        data = AlbertConfig.from_json_file(source.model_config).to_dict()
    else:
        if source.model_size not in PRESETS:
            raise SettingError(f"{{model_size}} {source.model_size!r} is unknown; expected one "
                               f"of {sorted(PRESETS)}", "model_size")
        data = AlbertConfig.from_preset(source.model_size).to_dict()
    if vocabulary:
        data["vocab_size"] = load_spm(vocabulary).GetPieceSize()
    if source.vocab_size:
        data["vocab_size"] = source.vocab_size
    fields = set(AlbertConfig.__dataclass_fields__)
    for item in source.config_override:
        key, value = parse_override(item)
        if key not in fields:
            raise SettingError(f"{{config_override}}: {key!r} is not an AlbertConfig field",
                               "config_override")
        data[key] = value
    try:
        return AlbertConfig.from_dict(data)
    except (TypeError, ValueError) as e:
        raise ConfigError(f"invalid model configuration: {e}") from None


def check_fits(config, max_seq_length: int) -> None:
    """The one check that --max_seq_length fits the model's positions."""
    if max_seq_length > config.max_position_embeddings:
        raise SettingError(f"{{max_seq_length}} {max_seq_length} exceeds the model's "
                           f"max_position_embeddings ({config.max_position_embeddings})",
                           "max_seq_length")


# The identity entries no spec field holds: what the run computed from its spec and data.
DERIVED = ("model_config", "data", "global_batch", "total_steps")


def identity(spec: RunSpec, *, config, global_batch: int, total_steps: int,
             data: list[str]) -> dict:
    """The run's identity as a flat, JSON-ready dict (see the module docstring): what run.json
    records and a resume compares. Its entries are the spec's run fields (run_field, declared on
    RunSpec, Optimization and Execution; the task options' identity fields under "features" and
    "labels") and the DERIVED ones given here."""
    recorded = spec.options.identity()
    return {
        **recorded_fields(spec),
        "model_config": config.to_dict(),
        "data": data,
        "features": recorded["features"],
        "labels": recorded["labels"],
        **recorded_fields(spec.execution),
        **recorded_fields(spec.optimization),
        "global_batch": global_batch,
        "total_steps": total_steps,
    }


def toolkit_version() -> str | None:
    """This toolkit's version, as its distribution (TOOLKIT, not the import name albert) says;
    None when it runs from a checkout that was never installed."""
    try:
        return md.version(TOOLKIT)
    except md.PackageNotFoundError:
        return None


def _version_key(version: str) -> tuple:
    # Release numbers only: a record's version is compared with ours, never parsed further.
    return tuple(int(part) for part in re.findall(r"\d+", version.split("+")[0])[:3])


def _show(value) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def differences(before: dict, now: dict, _at: str = "") -> list[str]:
    """One 'key: recorded X, now Y' per entry that differs (nested dicts by their own keys)."""
    out = []
    for key in sorted(set(before) | set(now)):
        if key in MAY_CHANGE:
            continue
        a, b = before.get(key, LEGACY_VALUES.get(_at + key)), now.get(key)
        if a == b:
            continue
        if isinstance(a, dict) and isinstance(b, dict):
            out += [f"{key}.{d}" for d in differences(a, b, f"{_at}{key}.")]
        else:
            out.append(f"{key}: recorded {_show(a)}, now {_show(b)}")
    return out


def unknown(before: dict, now: dict, _at: str = "") -> list[str]:
    """The entries `before` records that `now` does not have at all (nested dicts by their own
    keys): settings of a newer version of the toolkit, which no flag of this one can give."""
    out = []
    for key in sorted(set(before) - MAY_CHANGE):
        if key not in now:
            out.append(_at + key)
        elif isinstance(before[key], dict) and isinstance(now[key], dict):
            out += unknown(before[key], now[key], f"{_at}{key}.")
    return out


def check_resume(previous: Record | dict | None, spec: dict, directory: str, step: int) -> dict:
    """Refuse to resume the run recorded in `directory` under another spec; log a changed
    --total_steps. `previous` is the recorded run record (None: none, and the flags decide).
    Returns the spec the resumed run goes on with (a run recorded before specs keeps its
    optimizer's form)."""
    if previous is None:
        return spec
    if not isinstance(previous, Record):
        previous = Record.from_json(previous)
    if previous.spec is None:
        return resume_before_specs(previous, spec, directory, step)
    version = (previous.versions or {}).get(TOOLKIT)
    recorded = first_spec_warmup(previous.spec, spec)
    refuse_unknown_settings(recorded, spec, directory, step, version)
    refuse_differences(recorded, spec, directory, step)
    ours = toolkit_version()
    if version and ours and _version_key(str(version)) > _version_key(ours):
        logger.warning("%s was recorded by %s %s, newer than this %s: resuming, as every "
                       "setting it records is this command's", directory, TOOLKIT, version, ours)
    old, new = previous.spec.get("total_steps"), spec.get("total_steps")
    if old != new:
        logger.warning("--total_steps %s -> %s: the learning rate now decays to "
                       "--end_learning_rate over %s updates instead of %s (the run is at "
                       "update %d)", old, new, new, old, step)
    return spec


def first_spec_warmup(recorded: dict, spec: dict) -> dict:
    """The recorded spec as this version writes its warmup. The first spec (19f56ad) recorded
    the warmup as a number of updates, resolved from --warmup_proportion and --total_steps, and
    no proportion: the same run as a command whose proportion of the recorded --total_steps gives
    that number."""
    proportion = spec.get("warmup_proportion")
    if "warmup_proportion" in recorded or spec.get("warmup_steps") is not None \
            or proportion is None:
        return recorded
    total = recorded.get("total_steps")
    if isinstance(total, int) and recorded.get("warmup_steps") == int(proportion * total):
        return {**recorded, "warmup_steps": None, "warmup_proportion": proportion}
    return recorded


def resume_before_specs(previous: Record, spec: dict, directory: str, step: int) -> dict:
    """A run recorded before run specs: nothing to compare but the optimizer's form, which it
    keeps (the spec it goes on with)."""
    logger.warning("%s holds a run recorded before run specs: its settings cannot be "
                   "compared with this command's", directory)
    if previous.bias_correction is not None:
        # Recorded by the version before specs, which refused the other form on resume.
        before = "on" if previous.bias_correction else "off"
        if previous.bias_correction != spec.get("bias_correction"):
            raise CheckpointError(
                f"--checkpoint_dir {directory} holds a run trained with --bias_correction "
                f"{before} (step {step}); this command says "
                f"{'on' if spec.get('bias_correction') else 'off'}. Resume it with "
                f"--bias_correction {before}, use a new --output_dir / --checkpoint_dir, "
                "or add --overwrite_checkpoint_dir (--overwrite_output_dir) to discard it")
        return spec
    if spec.get("bias_correction"):
        # No entry at all: recorded before --bias_correction existed, when every run trained
        # with Google's uncorrected moments; switching mid-run would make every later update
        # another size. A new run directory starts corrected.
        logger.warning("it began with uncorrected Adam moments (before --bias_correction "
                       "existed) and continues so; use a new --checkpoint_dir for a "
                       "bias-corrected run")
        return {**spec, "bias_correction": False}
    return spec


def refuse_unknown_settings(recorded: dict, spec: dict, directory: str, step: int,
                            version: str | None) -> None:
    """Refuse a run of the same task recorded with settings this version has no flag for (a
    newer version's), naming the version that can resume it."""
    strange = unknown(recorded, spec) if recorded.get("task") == spec.get("task") else []
    if not strange:
        return
    ours = toolkit_version()
    by = f"{TOOLKIT} {version}" if version else f"a version of {TOOLKIT} that recorded none"
    raise CheckpointError(
        f"--checkpoint_dir {directory} holds a run (step {step}) recorded by {by}, with "
        f"settings this version ({ours or 'uninstalled'}) does not know: "
        f"{', '.join(strange)}. Resume it with "
        f"{f'{TOOLKIT} {version} or later' if version else 'the version that began it'}, "
        "or use a new --output_dir / --checkpoint_dir")


def refuse_differences(recorded: dict, spec: dict, directory: str, step: int) -> None:
    """Refuse a command that describes another run than the recorded one, naming each
    difference."""
    diffs = differences(recorded, spec)
    if diffs:
        raise CheckpointError(
            f"--checkpoint_dir {directory} holds another run (step {step}); this command "
            f"differs in {'; '.join(diffs)}. Resume it with the recorded settings, use a new "
            "--output_dir / --checkpoint_dir, or add --overwrite_checkpoint_dir "
            "(--overwrite_output_dir) to discard it")


def settle(flags: dict, card: dict | None, defaults: dict, model: str) -> dict:
    """{name: value} for each feature setting in `defaults`: the flag when given (ValueError when
    the card holds another value: other windows than training's give other answers), else the
    card's, else the default (a model without a card). `model` names it in the message, e.g.
    "--checkpoint_path serving/1"."""
    features = (card or {}).get("features") or {}
    out = {}
    for name, default in defaults.items():
        given, trained = flags.get(name), features.get(name)
        if given is not None and trained is not None and given != trained:
            mark = "{" + name + "}"
            raise SettingError(f"{mark} {given} differs from the {trained} that {model} was "
                               f"fine-tuned with: drop {mark}", name)
        out[name] = given if given is not None else trained if trained is not None else default
    return out
