"""TensorFlow SavedModels for serving: a model written with its assets (where it may go is
io.export_dir's, checked before any work), and a fine-tuner's --export_dir at the end of its run.

The SavedModel's `serving_default` signature takes int32 `input_ids`, `attention_mask` and
`token_type_ids` [batch, seq] and returns the float32 outputs of its task (albert.model.heads:
its kind is the task's one name). The config, the
vocabulary and a fine-tuned model's task card travel with it as assets/config.json,
assets/spiece.model and assets/albert_task.json. The command that exports a checkpoint is
albert.export; this module takes flags only as names in its messages.
"""

from __future__ import annotations

import json
import logging
import os
import shutil

import keras
import tensorflow as tf

from albert.data.tokenization import load_spm, text_rule, write_tokenizer_config
from albert.errors import CheckpointError, SettingError
from albert.fs import new_directory, staged_directory
from albert.io.export_dir import check_output_dir
from albert.io.pretrained import load_model
from albert.io.task_card import read_task_card, write_task_card
from albert.model import MODEL_INPUTS, modeling
from albert.model.heads import TASKS, task_name

logger = logging.getLogger(__name__)

# An export's kind is the task's one name (albert.model.heads.TASKS); a card's "task" and
# albert.export's --head are read through task_name, so their old spellings ("regression",
# "qa") still name theirs.


def model_class(task: str):
    """The model class an export task needs (TASKS)."""
    task = task_name(task)
    if task not in TASKS:
        raise ValueError(f"unknown task {task!r}; expected one of {sorted(TASKS)}")
    return getattr(modeling, TASKS[task].model)


def float32_copy(model):
    """`model` itself when it computes in float32, else a float32 twin with the same weights.

    A model trained under a mixed-precision policy (run_squad --precision bf16/fp16) computes
    its matmuls in 16 bits; the export serves full precision whatever the training used.
    """
    if model.dtype_policy.compute_dtype == "float32":
        return model
    previous = keras.mixed_precision.global_policy()
    keras.mixed_precision.set_global_policy("float32")
    # A classifier's head is as wide as its labels (the class's default is two).
    options = ({"num_labels": model.num_labels,
                "label_names": list(model.label_names) if model.label_names else None}
               if hasattr(model, "classifier") else {})
    try:
        twin = type(model)(model.config, **options)
        twin.build_for_config()
    finally:
        keras.mixed_precision.set_global_policy(previous)
    for target, source in zip(twin.weights, model.weights, strict=True):
        target.assign(keras.ops.cast(source, "float32"))
    return twin


# -- writing one ----------------------------------------------------------------------------------


def export_saved_model(model, output_dir: str, task: str, spm_model: str | None = None, *,
                       overwrite: bool = False, protect=(), card: dict | None = None) -> str:
    """Write `model` as a SavedModel in `output_dir` and return it. An existing SavedModel there
    is replaced; anything else only as check_output_dir allows (`overwrite`, `protect`).

    Signature `serving_default`: int32 input_ids, attention_mask, token_type_ids [batch, seq] ->
    the outputs of the task (albert.model.heads.TASKS), float32, computed in float32 (see
    float32_copy). spm_model (a SentencePiece file) becomes assets/spiece.model, the config
    assets/config.json and the task card (io.task_card: the windows and labels it was
    fine-tuned with) assets/albert_task.json.
    Written to a temporary sibling that then replaces `output_dir` (albert.fs), so a model
    server watching the parent never sees a half-written version.
    """
    task = task_name(task)
    if task not in TASKS:
        raise ValueError(f"unknown task {task!r}; expected one of {sorted(TASKS)}")
    head, outputs = TASKS[task].head, TASKS[task].outputs
    if not hasattr(model, head):
        raise SettingError(f"{{task}} {task} needs a model with a {head} head; "
                           f"{type(model).__name__} has none", ("task", "head"))
    if spm_model is not None:
        load_spm(spm_model)  # a clear error now rather than a useless export
    if task == "classification":
        card = classifier_card(model, card)
    output_dir = check_output_dir(output_dir, overwrite=overwrite, protect=protect)
    model = float32_copy(model)
    parent = os.path.dirname(output_dir)
    os.makedirs(parent, exist_ok=True)

    spec = tf.TensorSpec([None, None], tf.int32)

    @tf.function(input_signature=[spec, spec, spec])
    def serve(input_ids, attention_mask, token_type_ids):
        out = model(dict(zip(MODEL_INPUTS, (input_ids, attention_mask, token_type_ids),
                             strict=True)), training=False)
        return {name: tf.cast(out[name], tf.float32) for name in outputs}

    # Assets are copied into the SavedModel under their base names, hence a staging directory.
    staging = new_directory(parent, ".assets-")
    try:
        with open(os.path.join(staging, "config.json"), "w", encoding="utf-8") as f:
            json.dump({**model.config.to_dict(), **_labels_config(model, card)}, f, indent=2,
                      sort_keys=True)
            f.write("\n")
        assets = [os.path.join(staging, "config.json")]
        if card is not None:
            assets.append(write_task_card(staging, card))
        if spm_model is not None:
            shutil.copyfile(spm_model, os.path.join(staging, "spiece.model"))
            assets.append(os.path.join(staging, "spiece.model"))
            # The vocabulary's text rule travels with it (without it: accents stripped).
            assets.append(write_tokenizer_config(staging, text_rule(spm_model)))
        module = tf.Module()
        # The variables, not the Keras model: saving a Keras model object makes Keras trace its
        # own default signature (float inputs), which our int-only call rejects.
        module.weights = [getattr(v, "value", v) for v in model.weights]
        module.assets = [tf.saved_model.Asset(path) for path in assets]
        module.serve = serve
        with staged_directory(output_dir) as staged:
            tf.saved_model.save(module, staged, signatures={"serving_default": serve})
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return output_dir


def _labels_config(model, card: dict | None) -> dict:
    """A classifier's outputs as Hugging Face's config.json names them (id2label, label2id,
    problem_type): the model's own record of its labels, against which albert.classify checks
    the task card (a card edited or copied from another model would flip every label)."""
    if not hasattr(model, "classifier"):
        return {}
    regression = model.num_labels == 1
    names = (None if regression else (card or {}).get("labels") or model.label_names) \
        or [f"LABEL_{i}" for i in range(model.num_labels)]
    return {"id2label": {str(i): name for i, name in enumerate(names)},
            "label2id": {name: i for i, name in enumerate(names)},
            "problem_type": "regression" if regression else "single_label_classification"}


def classifier_card(model, card: dict | None) -> dict:
    """The task card a classifier's SavedModel carries: its run's, with the labels the model
    holds when the run named none. A model without a card (from elsewhere, or older) gets what
    the model itself knows (classification or regression, its id2label): never windows or a
    vocabulary checksum nobody recorded."""
    regression = model.num_labels == 1
    card = dict(card) if card else {"features": {}, "vocabulary_sha256": None}
    card["task"] = card.get("task") or ("regression" if regression else "classification")
    if not regression and not card.get("labels") and model.label_names:
        card["labels"] = list(model.label_names)
    card.setdefault("labels", None)
    labels = card.get("labels")
    if not regression and labels and len(labels) != model.num_labels:
        raise CheckpointError(f"the task card names {len(labels)} labels for a classifier with "
                              f"{model.num_labels} outputs")
    return card


# -- a fine-tuner's --export_dir (run_squad, run_classifier) --------------------------------------


def export_after_run(spec, model, task: str, dist) -> str | None:
    """--export_dir at the end of a fine-tuner's run (rank 0; check_export_dir ran at its
    start): the model just trained (with --keep_best, the best one kept), or the fine-tuned
    model an evaluation-only run used, with the task card of that run. Returns the SavedModel's
    path (None: no --export_dir, or not rank 0)."""
    out = spec.outputs
    if not out.export_dir or not dist.is_chief:
        return None
    card = read_task_card(out.checkpoint_dir if spec.trains
                          else spec.model.checkpoint_path or out.checkpoint_dir)
    best = os.path.join(out.checkpoint_dir, "best")
    if spec.trains and out.keep_best and os.path.isdir(best):
        model = load_model(type(model), best)
        logger.info("exporting the best model (--keep_best %s): %s", out.keep_best, best)
    path = export_saved_model(model, out.export_dir, task, spm_model=spec.vocabulary, card=card)
    print(f"SavedModel: {path}", flush=True)
    return path
