"""Export an ALBERT model as a TensorFlow SavedModel that a server loads without this package.

    python -m albert.export --checkpoint_path runs/squad/checkpoints --task qa \\
        --output_dir serving/1

--checkpoint_path takes a trainer checkpoint (a prefix, or a directory whose latest checkpoint is
used, with config.json beside it), a Hugging Face directory or a Google ALBERT directory. The
SavedModel's `serving_default` signature takes int32 `input_ids`, `attention_mask` and
`token_type_ids` of shape [batch, seq] (both dynamic, seq up to max_position_embeddings) and
returns float32 `start_logits`, `end_logits` [batch, seq] (--task qa) or `mlm_logits`
[batch, seq, vocab], `sop_logits` [batch, 2] (--task pretraining). The vocabulary and the model
config travel with it as assets/spiece.model and assets/config.json.
"""

from __future__ import annotations

import argparse
import logging
import os
import shutil
import sys
import tempfile

logger = logging.getLogger("albert.export")

# task -> (model class name in albert.modeling, the head attribute it needs, signature outputs)
TASKS = {
    "qa": ("AlbertForQuestionAnswering", "qa_outputs", ("start_logits", "end_logits")),
    "pretraining": ("AlbertForPreTraining", "predictions", ("mlm_logits", "sop_logits")),
}
INPUT_NAMES = ("input_ids", "attention_mask", "token_type_ids")


def model_class(task: str):
    import albert.modeling

    if task not in TASKS:
        raise ValueError(f"unknown task {task!r}; expected one of {sorted(TASKS)}")
    return getattr(albert.modeling, TASKS[task][0])


def float32_copy(model):
    """`model` itself when it computes in float32, else a float32 twin with the same weights.

    A model trained under a mixed-precision policy (run_squad --precision bf16/fp16) computes
    its matmuls in 16 bits; the export serves full precision whatever the training used.
    """
    import keras

    if model.dtype_policy.compute_dtype == "float32":
        return model
    previous = keras.mixed_precision.global_policy()
    keras.mixed_precision.set_global_policy("float32")
    try:
        twin = type(model)(model.config)
        twin.build_for_config()
    finally:
        keras.mixed_precision.set_global_policy(previous)
    for target, source in zip(twin.weights, model.weights, strict=True):
        target.assign(keras.ops.cast(source, "float32"))
    return twin


def export_saved_model(model, output_dir: str, task: str, spm_model: str | None = None) -> str:
    """Write `model` as a SavedModel in `output_dir` (replaced if it exists) and return it.

    Signature `serving_default`: int32 input_ids, attention_mask, token_type_ids [batch, seq] ->
    the TASKS[task] outputs, float32, computed in float32 (see float32_copy). spm_model (a
    SentencePiece file) becomes assets/spiece.model and the config assets/config.json. Written to
    a temporary sibling and renamed into place, so a model server watching the parent never sees
    a half-written version.
    """
    import tensorflow as tf

    if task not in TASKS:
        raise ValueError(f"unknown task {task!r}; expected one of {sorted(TASKS)}")
    _, head, outputs = TASKS[task]
    if not hasattr(model, head):
        raise ValueError(f"--task {task} needs a model with a {head} head; "
                         f"{type(model).__name__} has none")
    if spm_model is not None:
        from albert.tokenization import load_spm

        load_spm(spm_model)  # a clear error now rather than a useless export
    model = float32_copy(model)
    output_dir = os.path.abspath(os.fspath(output_dir))
    parent = os.path.dirname(output_dir)
    os.makedirs(parent, exist_ok=True)

    spec = tf.TensorSpec([None, None], tf.int32)

    @tf.function(input_signature=[spec, spec, spec])
    def serve(input_ids, attention_mask, token_type_ids):
        out = model({"input_ids": input_ids, "attention_mask": attention_mask,
                     "token_type_ids": token_type_ids}, training=False)
        return {name: tf.cast(out[name], tf.float32) for name in outputs}

    staging = tempfile.mkdtemp(prefix=".assets-", dir=parent)
    tmp = tempfile.mkdtemp(prefix=".tmp-", dir=parent)
    try:
        # Assets are copied into the SavedModel under their base names, hence the staging copy.
        model.config.to_json_file(os.path.join(staging, "config.json"))
        assets = [os.path.join(staging, "config.json")]
        if spm_model is not None:
            shutil.copyfile(spm_model, os.path.join(staging, "spiece.model"))
            assets.append(os.path.join(staging, "spiece.model"))
        module = tf.Module()
        # The variables, not the Keras model: saving a Keras model object makes Keras trace its
        # own default signature (float inputs), which our int-only call rejects.
        module.weights = [getattr(v, "value", v) for v in model.weights]
        module.assets = [tf.saved_model.Asset(path) for path in assets]
        module.serve = serve
        tf.saved_model.save(module, tmp, signatures={"serving_default": serve})
        if os.path.isdir(output_dir):
            old = output_dir + ".old"
            shutil.rmtree(old, ignore_errors=True)
            os.rename(output_dir, old)
            os.rename(tmp, output_dir)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.rename(tmp, output_dir)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        shutil.rmtree(staging, ignore_errors=True)
    return output_dir


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--checkpoint_path", required=True,
                   help="trainer checkpoint (prefix or directory), Hugging Face or Google "
                        "ALBERT directory")
    p.add_argument("--task", choices=sorted(TASKS), required=True)
    p.add_argument("--output_dir", required=True,
                   help="where the SavedModel goes, e.g. serving/1 (TF Serving's version dir)")
    p.add_argument("--spm_model", default=None,
                   help="SentencePiece vocabulary (default: the one beside the checkpoint)")
    return p.parse_args(argv)


def run(args) -> int:
    from albert.convert import CheckpointError, load_model, vocabulary_file

    path = args.checkpoint_path
    if not os.path.exists(path) and not os.path.exists(path + ".index"):
        raise CheckpointError(f"--checkpoint_path {path} does not exist")
    spm_model = args.spm_model or vocabulary_file(path)
    if not spm_model:
        raise CheckpointError(f"no vocabulary beside {path} (spiece.model or 30k-clean.model); "
                              "pass --spm_model")
    if not os.path.isfile(spm_model):
        raise FileNotFoundError(f"--spm_model {spm_model} does not exist")
    model = load_model(model_class(args.task), path)
    out = export_saved_model(model, args.output_dir, args.task, spm_model=spm_model)
    print(f"exported {args.task} SavedModel to {out} (signature serving_default: "
          f"{', '.join(TASKS[args.task][2])})", flush=True)
    return 0


def main(argv=None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    args = parse_args(argv)
    from albert.flags import user_errors

    with user_errors():
        return run(args)


if __name__ == "__main__":
    sys.exit(main())
