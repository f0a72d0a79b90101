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
import hashlib
import importlib.metadata as md
import logging
import os
import re
import sys
from dataclasses import dataclass, field

from albert.data.tokenization import load_spm
from albert.errors import CheckpointError, FlagError
from albert.io.weights import check_vocabulary  # noqa: F401 (one check, re-exported)
from albert.model.config import PRESETS, AlbertConfig, check_field
from albert.train.batch_plan import PlanError, resolve_batch_plan

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
    optimizer: str = "adamw"
    bias_correction: bool = True
    # None: a training run's build settles it by the model's size, the one rule
    # (albert.tasks.Task.default_learning_rate), as a fine-tuner without --learning_rate does.
    learning_rate: float | None = None
    end_learning_rate: float = 0.0
    lr_decay: str = "from_warmup"
    decay_power: float = 1.0
    warmup_steps: int | None = 0
    warmup_proportion: float | None = None
    weight_decay: float = 0.01
    max_grad_norm: float = 1.0

    def warmup(self, total_steps: int) -> int:
        if self.warmup_steps is not None:
            return self.warmup_steps
        return int((self.warmup_proportion or 0.0) * total_steps)

    def schedule(self, total_steps: int):
        """step -> learning rate (optimization.learning_rate_at with this spec's values)."""
        # optimization imports TensorFlow; this module stays without it for the command-line
        # tools (cli.flags, cli.resolve, --plan_only).
        from albert.train.optimization import learning_rate_at

        warmup = self.warmup(total_steps)

        def at(step):
            return learning_rate_at(step, self.learning_rate, warmup, total_steps,
                                    self.end_learning_rate, self.decay_power, self.lr_decay)
        return at


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
        """The BatchPlan for `ranks` processes (FlagError naming the flags that disagree)."""
        if self.auto:
            raise FlagError("--per_gpu_batch_size auto has to be resolved (albert.train.memory) "
                            "before the batch plan")
        try:
            return resolve_batch_plan(ranks, self.per_gpu_batch_size, self.global_batch_size,
                                      self.gradient_accumulation_steps, self.default_micro_batch)
        except PlanError as e:
            raise FlagError(str(e)) from None

    def chosen(self, micro_batch: int, accumulation: int) -> Batching:
        """This request with --per_gpu_batch_size auto decided."""
        return dataclasses.replace(self, per_gpu_batch_size=micro_batch,
                                   gradient_accumulation_steps=accumulation)


@dataclass(frozen=True)
class Execution:
    precision: str = "fp32"
    fp16_allreduce: bool = False
    xla: str = "auto"  # auto | on | off (--skip_xla is off)
    eager: bool = False
    seed: int = 42


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


def identity_field(default=dataclasses.MISSING, *, under: str = "features", record=None):
    """A task option that belongs to the run's identity, recorded in run.json's spec `under`
    "features" (or "labels") as `record(value)` (default: the value itself)."""
    return field(default=default, metadata={IDENTITY: under, "record": record})


@dataclass(frozen=True, kw_only=True)
class TaskOptions:
    """What every task has: the sequence length it trains and predicts at."""
    max_seq_length: int = identity_field()

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
    task: str
    options: TaskOptions
    model: ModelSource = field(default_factory=ModelSource)
    vocabulary: str | None = None
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


def parse_override(item: str):
    """--config_override KEY=VALUE -> (key, checked value)."""
    if "=" not in item:
        raise FlagError(f"--config_override expects KEY=VALUE, got {item!r}")
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
        raise FlagError(f"--config_override {key}={raw}: {e}") from None
    return key, value


def model_config(source: ModelSource, vocabulary: str | None):
    """The config a new model gets: --model_config or --model_size, then the vocabulary's size
    (or --vocab_size) and --config_override."""
    if source.model_config:
        data = AlbertConfig.from_json_file(source.model_config).to_dict()
    else:
        if source.model_size not in PRESETS:
            raise FlagError(f"--model_size {source.model_size!r} is unknown; expected one of "
                            f"{sorted(PRESETS)}")
        data = AlbertConfig.from_preset(source.model_size).to_dict()
    if vocabulary:
        data["vocab_size"] = load_spm(vocabulary).GetPieceSize()
    if source.vocab_size:
        data["vocab_size"] = source.vocab_size
    fields = set(AlbertConfig.__dataclass_fields__)
    for item in source.config_override:
        key, value = parse_override(item)
        if key not in fields:
            raise FlagError(f"--config_override: {key!r} is not an AlbertConfig field")
        data[key] = value
    try:
        return AlbertConfig.from_dict(data)
    except (TypeError, ValueError) as e:
        raise FlagError(f"invalid model configuration: {e}") from None


def check_fits(config, max_seq_length: int) -> None:
    """The one check that --max_seq_length fits the model's positions."""
    if max_seq_length > config.max_position_embeddings:
        raise FlagError(f"--max_seq_length {max_seq_length} exceeds the model's "
                        f"max_position_embeddings ({config.max_position_embeddings})")


def identity(spec: RunSpec, *, config, global_batch: int, total_steps: int,
             data: list[str]) -> dict:
    """The run's identity as a flat, JSON-ready dict (see the module docstring): what run.json
    records and a resume compares. Warmup is recorded as given (--warmup_steps, or
    --warmup_proportion of the total), so raising --total_steps does not read as another
    warmup."""
    o, m = spec.optimization, spec.model
    recorded = spec.options.identity()
    return {
        "task": spec.task,
        "started_from": m.started_from(),
        "model_config": config.to_dict(),
        "data": data,
        "vocabulary_sha256": file_sha256(spec.vocabulary) if spec.vocabulary else None,
        "features": recorded["features"],
        "labels": recorded["labels"],
        "seed": spec.execution.seed,
        "optimizer": o.optimizer,
        "bias_correction": o.bias_correction,
        "learning_rate": o.learning_rate,
        "end_learning_rate": o.end_learning_rate,
        "lr_decay": o.lr_decay,
        "decay_power": o.decay_power,
        "warmup_steps": o.warmup_steps,
        "warmup_proportion": o.warmup_proportion if o.warmup_steps is None else None,
        "weight_decay": o.weight_decay,
        "max_grad_norm": o.max_grad_norm,
        "global_batch": global_batch,
        "precision": spec.execution.precision,
        "fp16_allreduce": spec.execution.fp16_allreduce,
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


def environment() -> dict:
    """The command line and the versions that produced a run, for the record."""
    import tensorflow as tf  # a training run's record; the command-line tools run without it

    versions = {"python": sys.version.split()[0], "tensorflow": tf.__version__}
    if toolkit_version():
        versions[TOOLKIT] = toolkit_version()
    for name in ("keras", "horovod", "transformers", "sentencepiece", "numpy"):
        try:
            versions[name] = md.version(name)
        except md.PackageNotFoundError:
            continue
    main = getattr(sys.modules.get("__main__"), "__spec__", None)
    program = ["-m", main.name] if main is not None else sys.argv[:1]  # as typed: python -m ...
    return {"command": [os.path.basename(sys.executable), *program, *sys.argv[1:]],
            "versions": versions}


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


def check_resume(previous: dict | None, spec: dict, directory: str, step: int) -> dict:
    """Refuse to resume the run recorded in `directory` under another spec; log a changed
    --total_steps. `previous` is the recorded run record (None: none, and the flags decide).
    Returns the spec the resumed run goes on with (a run recorded before specs keeps its
    optimizer's form)."""
    if previous is None:
        return spec
    recorded = previous.get("spec")
    if recorded is None:
        logger.warning("%s holds a run recorded before run specs: its settings cannot be "
                       "compared with this command's", directory)
        if "bias_correction" in previous:
            # Recorded by the version before specs, which refused the other form on resume.
            before = "on" if previous["bias_correction"] else "off"
            if previous["bias_correction"] != spec.get("bias_correction"):
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
    version, ours = (previous.get("versions") or {}).get(TOOLKIT), toolkit_version()
    newer = bool(version and ours and _version_key(str(version)) > _version_key(ours))
    diffs = differences(recorded, spec)
    strange = unknown(recorded, spec) if recorded.get("task") == spec.get("task") else []
    if strange:
        by = f"{TOOLKIT} {version}" if version else f"a version of {TOOLKIT} that recorded none"
        raise CheckpointError(
            f"--checkpoint_dir {directory} holds a run (step {step}) recorded by {by}, with "
            f"settings this version ({ours or 'uninstalled'}) does not know: "
            f"{', '.join(strange)}. Resume it with "
            f"{f'{TOOLKIT} {version} or later' if version else 'the version that began it'}, "
            "or use a new --output_dir / --checkpoint_dir")
    if diffs:
        raise CheckpointError(
            f"--checkpoint_dir {directory} holds another run (step {step}); this command "
            f"differs in {'; '.join(diffs)}. Resume it with the recorded settings, use a new "
            "--output_dir / --checkpoint_dir, or add --overwrite_checkpoint_dir "
            "(--overwrite_output_dir) to discard it")
    if newer:
        logger.warning("%s was recorded by %s %s, newer than this %s: resuming, as every "
                       "setting it records is this command's", directory, TOOLKIT, version, ours)
    old, new = recorded.get("total_steps"), spec.get("total_steps")
    if old != new:
        logger.warning("--total_steps %s -> %s: the learning rate now decays to "
                       "--end_learning_rate over %s updates instead of %s (the run is at "
                       "update %d)", old, new, new, old, step)
    return spec


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
            raise FlagError(f"--{name} {given} differs from the {trained} that {model} was "
                             f"fine-tuned with: drop --{name}")
        out[name] = given if given is not None else trained if trained is not None else default
    return out
