"""The model that albert.answer and albert.classify ask, loaded: a SavedModel's serving
signature, or a trainer checkpoint's or a Hugging Face / Google directory's model, as a function
from int32 [B, S] numpy inputs to float32 numpy logits.

TensorFlow at the top: the commands import this module in their run(), once the flags, the task
card and the inputs are checked (cli.serving), so a bad flag or input is answered in a second.
"""

from __future__ import annotations

import os

import tensorflow as tf

from albert.errors import CheckpointError
from albert.io.model_dir import vocabulary_file
from albert.io.pretrained import load_model
from albert.model.config import AlbertConfig
from albert.model.modeling import AlbertForQuestionAnswering, AlbertForSequenceClassification


def _is_saved_model(path: str) -> bool:
    return os.path.isfile(os.path.join(path, "saved_model.pb"))


def _load_saved_model(path: str):
    try:
        return tf.saved_model.load(path)
    except Exception as e:  # protobuf, OS and TF errors all mean "not a usable SavedModel"
        raise CheckpointError(f"cannot load SavedModel {path}: "
                              f"{str(e).splitlines()[0][:300]}") from None


def _assets_config_path(path: str) -> str:
    config_path = os.path.join(path, "assets", "config.json")
    if not os.path.isfile(config_path):
        raise CheckpointError(f"--checkpoint_path {path} has no assets/config.json: export "
                              "it with python -m albert.export")
    return config_path


def load_qa_model(path: str):
    """(logits_fn, AlbertConfig, vocabulary path or None) for a QA SavedModel or checkpoint.

    logits_fn(input_ids, attention_mask, token_type_ids), int32 [B, S] numpy arrays ->
    (start_logits, end_logits) float32 [B, S] numpy arrays.
    """
    if _is_saved_model(path):
        loaded = _load_saved_model(path)
        signature = loaded.signatures.get("serving_default")
        outputs = sorted(signature.structured_outputs) if signature is not None else []
        if not {"start_logits", "end_logits"} <= set(outputs):
            raise CheckpointError(
                f"--checkpoint_path {path} is not a question-answering SavedModel (its "
                f"serving_default signature returns {', '.join(outputs) or 'nothing'}, not "
                f"start_logits and end_logits); export one with python -m albert.export --head "
                "squad")
        config = AlbertConfig.from_json_file(_assets_config_path(path))

        def logits_fn(input_ids, attention_mask, token_type_ids):
            out = signature(input_ids=tf.constant(input_ids),
                            attention_mask=tf.constant(attention_mask),
                            token_type_ids=tf.constant(token_type_ids))
            return out["start_logits"].numpy(), out["end_logits"].numpy()

        return logits_fn, config, vocabulary_file(path)

    model = load_model(AlbertForQuestionAnswering, path)

    @tf.function(reduce_retracing=True)
    def call(input_ids, attention_mask, token_type_ids):
        out = model({"input_ids": input_ids, "attention_mask": attention_mask,
                     "token_type_ids": token_type_ids}, training=False)
        return out["start_logits"], out["end_logits"]

    def logits_fn(input_ids, attention_mask, token_type_ids):
        start, end = call(tf.constant(input_ids), tf.constant(attention_mask),
                          tf.constant(token_type_ids))
        return start.numpy(), end.numpy()

    return logits_fn, model.config, vocabulary_file(path)


def load_classifier(path: str, card: dict | None):
    """(logits_fn, AlbertConfig, number of outputs, label names or None) for a classifier
    SavedModel, trainer checkpoint or Hugging Face directory.

    logits_fn(input_ids, attention_mask, token_type_ids), int32 [B, S] numpy arrays -> float32
    [B, outputs] numpy logits.
    """
    if _is_saved_model(path):
        loaded = _load_saved_model(path)
        signature = loaded.signatures.get("serving_default")
        outputs = signature.structured_outputs if signature is not None else {}
        if "logits" not in outputs:
            raise CheckpointError(
                f"--checkpoint_path {path} is not a classifier SavedModel (its serving_default "
                f"signature returns {', '.join(sorted(outputs)) or 'nothing'}, not logits); "
                "export one with python -m albert.export --head classification")
        config_path = _assets_config_path(path)
        width = outputs["logits"].shape[-1]

        def logits_fn(input_ids, attention_mask, token_type_ids):
            out = signature(input_ids=tf.constant(input_ids),
                            attention_mask=tf.constant(attention_mask),
                            token_type_ids=tf.constant(token_type_ids))
            return out["logits"].numpy()

        return logits_fn, AlbertConfig.from_json_file(config_path), width, None

    labels = (card or {}).get("labels")
    # A trainer checkpoint holds no id2label: the run's labels (its card) name the outputs.
    options = ({"num_labels": 1} if (card or {}).get("task") == "regression" else
               {"num_labels": len(labels), "label_names": list(labels)} if labels else {})
    model = load_model(AlbertForSequenceClassification, path, **options)

    @tf.function(reduce_retracing=True)
    def call(input_ids, attention_mask, token_type_ids):
        return model({"input_ids": input_ids, "attention_mask": attention_mask,
                      "token_type_ids": token_type_ids}, training=False)["logits"]

    def logits_fn(input_ids, attention_mask, token_type_ids):
        return call(tf.constant(input_ids), tf.constant(attention_mask),
                    tf.constant(token_type_ids)).numpy()

    return logits_fn, model.config, model.num_labels, model.label_names
