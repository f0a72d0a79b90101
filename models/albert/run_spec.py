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

import hashlib
import logging
import os
import sys

logger = logging.getLogger("albert.run_spec")

# Spec entries a resume may change; everything else must match the recorded run.
MAY_CHANGE = frozenset({"total_steps"})


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


def started_from(args) -> dict:
    """What a run starts from, as recorded in its checkpoint directory's run record (the model
    config is checked separately, against the directory's config.json)."""
    path = args.checkpoint_path
    return {"load_from": "pretrained" if args.load_from == "huggingface" else args.load_from,
            "checkpoint_path": os.path.realpath(path) if path else None,
            "load_optimizer_state": bool(args.load_optimizer_state)}


def run_spec(args, *, task: str, config, global_batch: int, total_steps: int,
             data: list[str], vocab: str | None, features: dict, labels=None) -> dict:
    """The run's identity as a flat, JSON-ready dict (see the module docstring). Warmup is
    recorded as given (--warmup_steps, or --warmup_proportion of the total), so raising
    --total_steps does not read as another warmup."""
    warmup_steps = getattr(args, "warmup_steps", None)
    return {
        "task": task,
        "started_from": started_from(args),
        "model_config": config.to_dict(),
        "data": data,
        "vocabulary_sha256": file_sha256(vocab) if vocab else None,
        "features": dict(features),
        "labels": list(labels) if labels is not None else None,
        "seed": args.seed,
        "optimizer": args.optimizer,
        "bias_correction": args.bias_correction == "on",
        "learning_rate": args.learning_rate,
        "end_learning_rate": args.end_learning_rate,
        "lr_decay": args.lr_decay,
        "decay_power": args.decay_power,
        "warmup_steps": warmup_steps,
        "warmup_proportion": getattr(args, "warmup_proportion", None)
        if warmup_steps is None else None,
        "weight_decay": args.weight_decay,
        "max_grad_norm": args.max_grad_norm,
        "global_batch": global_batch,
        "precision": args.precision,
        "fp16_allreduce": bool(args.fp16_allreduce),
        "total_steps": total_steps,
    }


def environment() -> dict:
    """The command line and the versions that produced a run, for the record."""
    import importlib.metadata as md

    import tensorflow as tf

    versions = {"python": sys.version.split()[0], "tensorflow": tf.__version__}
    for name in ("albert", "keras", "horovod", "transformers", "sentencepiece", "numpy"):
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


def differences(before: dict, now: dict) -> list[str]:
    """One 'key: recorded X, now Y' per entry that differs (nested dicts by their own keys)."""
    out = []
    for key in sorted(set(before) | set(now)):
        if key in MAY_CHANGE:
            continue
        a, b = before.get(key), now.get(key)
        if a == b:
            continue
        if isinstance(a, dict) and isinstance(b, dict):
            out += [f"{key}.{d}" for d in differences(a, b)]
        else:
            out.append(f"{key}: recorded {_show(a)}, now {_show(b)}")
    return out


def check_resume(previous: dict | None, spec: dict, directory: str, step: int) -> dict:
    """Refuse to resume the run recorded in `directory` under another spec; log a changed
    --total_steps. `previous` is the recorded run record (None: none). Returns the spec the
    resumed run goes on with (a run recorded before specs keeps its optimizer's form)."""
    from albert.checkpoints import CheckpointError

    recorded = (previous or {}).get("spec")
    if recorded is None:
        logger.warning("%s holds a run recorded before run specs: its settings cannot be "
                       "compared with this command's", directory)
        if spec.get("bias_correction"):
            # Such runs trained with Google's uncorrected moments; switching mid-run would make
            # every later update another size. A new run directory starts corrected.
            logger.warning("it began with uncorrected Adam moments (before --bias_correction "
                           "existed) and continues so; use a new --checkpoint_dir for a "
                           "bias-corrected run")
            return {**spec, "bias_correction": False}
        return spec
    diffs = differences(recorded, spec)
    if diffs:
        raise CheckpointError(
            f"--checkpoint_dir {directory} holds another run (step {step}); this command "
            f"differs in {'; '.join(diffs)}. Resume it with the recorded settings, use a new "
            "--output_dir / --checkpoint_dir, or add --overwrite_checkpoint_dir "
            "(--overwrite_output_dir) to discard it")
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
    "--model serving/1"."""
    features = (card or {}).get("features") or {}
    out = {}
    for name, default in defaults.items():
        given, trained = flags.get(name), features.get(name)
        if given is not None and trained is not None and given != trained:
            raise ValueError(f"--{name} {given} differs from the {trained} that {model} was "
                             f"fine-tuned with: drop --{name}")
        out[name] = given if given is not None else trained if trained is not None else default
    return out


# -- what an exported model carries -------------------------------------------------------------
# A fine-tuned model is only usable as it was trained: the same windows (max_seq_length,
# doc_stride, max_query_length), the same labels in the same order, the same vocabulary. Exports
# carry them in TASK_FILE (beside a Hugging Face export's config.json, and among a SavedModel's
# assets), and serving tools take them from there.

TASK_FILE = "albert_task.json"


def task_card(spec: dict) -> dict:
    """What serving needs to know of a fine-tuning run's spec."""
    return {"task": spec.get("task"), "features": spec.get("features") or {},
            "labels": spec.get("labels"), "vocabulary_sha256": spec.get("vocabulary_sha256")}


def write_task_card(directory: str, card: dict) -> str:
    import json

    path = os.path.join(directory, TASK_FILE)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(card, f, indent=2)
    return path


def read_task_card(path: str) -> dict | None:
    """The task card of a model: a SavedModel's assets, a Hugging Face export's directory, or a
    trainer checkpoint's run record (directory or prefix). None when it has none (a model from
    elsewhere, or exported before cards existed). Plain JSON, no TensorFlow: the serving tools
    answer a flag that disagrees with the model at once."""
    import json

    directory = path if os.path.isdir(path) else os.path.dirname(os.path.abspath(path))
    for candidate in (os.path.join(directory, "assets", TASK_FILE),
                      os.path.join(directory, TASK_FILE), os.path.join(directory, "run.json")):
        if not os.path.isfile(candidate):
            continue
        try:
            with open(candidate, encoding="utf-8") as f:
                found = json.load(f)
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
            raise ValueError(f"{candidate} (of the model {path}) is unreadable ({e})") from None
        if not isinstance(found, dict):
            raise ValueError(f"{candidate} (of the model {path}) does not hold a JSON object")
        if candidate.endswith("run.json"):
            return task_card(found["spec"]) if found.get("spec") else None
        return found
    return None
