"""google-research/albert's TF1 releases: a directory with `albert_config.json`, a TF1 checkpoint
(`model.ckpt-best.*` in v2, `model.ckpt-<step>.*` in v1, or a TF-Hub module's
`variables/variables.*` whose names start with `module/`) and `30k-clean.model`, read into our
models. Finding a release's files (its config, its checkpoint, its vocabulary) is io.model_dir's.

Its kernels are [in, out] like ours; only the sentence-order, SQuAD and classifier output
weights are stored [out, in]. The model classes come in as arguments: this module never imports
albert.model.modeling.
"""

from __future__ import annotations

import numpy as np
import tensorflow as tf

from albert.errors import CheckpointError
from albert.io.model_dir import google_checkpoint_prefix, google_config_path
from albert.io.weights import assign, check_config
from albert.model.config import GOOGLE_CONFIG_NAME, AlbertConfig

TFHUB_PREFIX = "module/"


def google_variables(model):
    """[(google_name, variable, transpose)] for `model` under google-research/albert's TF1 names.

    Names from its modeling.py (bert/...) and run_pretraining.py (cls/...); `cls/squad` is the
    span head of its SQuAD v1 fine-tuning, `output_weights`/`output_bias` the classifier of its
    run_classifier. transpose: stored [out, in] (output_weights only).
    """
    emb, enc = model.albert.embeddings, model.albert.encoder

    def dense(prefix, layer):
        return [(f"{prefix}/kernel", layer.kernel, False), (f"{prefix}/bias", layer.bias, False)]

    def norm(prefix, layer):
        return [(f"{prefix}/gamma", layer.gamma, False), (f"{prefix}/beta", layer.beta, False)]

    out = [
        ("bert/embeddings/word_embeddings", emb.word_embeddings, False),
        ("bert/embeddings/position_embeddings", emb.position_embeddings, False),
        ("bert/embeddings/token_type_embeddings", emb.token_type_embeddings, False),
        *norm("bert/embeddings/LayerNorm", emb.layer_norm),
        *dense("bert/encoder/embedding_hidden_mapping_in", enc.embedding_projection),
    ]
    for g, group in enumerate(enc.groups):
        for i, layer in enumerate(group):
            p = f"bert/encoder/transformer/group_{g}/inner_group_{i}"
            out += [
                *dense(f"{p}/attention_1/self/query", layer.query),
                *dense(f"{p}/attention_1/self/key", layer.key),
                *dense(f"{p}/attention_1/self/value", layer.value),
                *dense(f"{p}/attention_1/output/dense", layer.attention_output),
                *norm(f"{p}/LayerNorm", layer.attention_norm),
                *dense(f"{p}/ffn_1/intermediate/dense", layer.ffn),
                *dense(f"{p}/ffn_1/intermediate/output/dense", layer.ffn_output),
                *norm(f"{p}/LayerNorm_1", layer.ffn_norm),
            ]
    if model.albert.pooler is not None:
        out += dense("bert/pooler/dense", model.albert.pooler)
    if "predictions" in model.heads:
        out += [
            *dense("cls/predictions/transform/dense", model.predictions.dense),
            *norm("cls/predictions/transform/LayerNorm", model.predictions.layer_norm),
            ("cls/predictions/output_bias", model.predictions.bias, False),
        ]
    if "sop_classifier" in model.heads:
        out += [("cls/seq_relationship/output_weights", model.sop_classifier.kernel, True),
                ("cls/seq_relationship/output_bias", model.sop_classifier.bias, False)]
    if "qa_outputs" in model.heads:
        out += [("cls/squad/output_weights", model.qa_outputs.kernel, True),
                ("cls/squad/output_bias", model.qa_outputs.bias, False)]
    if "classifier" in model.heads:
        # Its run_classifier's head, outside any scope, [num_labels, hidden].
        out += [("output_weights", model.classifier.kernel, True),
                ("output_bias", model.classifier.bias, False)]
    return out


# -- loading --------------------------------------------------------------------------------------


def load_google(cls, directory: str, config: AlbertConfig | None, require_heads: bool,
                prefix: str | None = None, options: dict | None = None):
    """A Google ALBERT directory (or one checkpoint `prefix` in it) -> `cls` with its weights."""
    config_path = google_config_path(directory)
    if config_path is None:
        raise CheckpointError(f"{directory} has no {GOOGLE_CONFIG_NAME}")
    try:
        file_config = AlbertConfig.from_google_json_file(config_path)
    except ValueError as e:
        raise CheckpointError(str(e)) from None
    config = check_config(directory, file_config, config)
    prefix = prefix or google_checkpoint_prefix(directory)
    if prefix is None:
        raise CheckpointError(
            f"{directory} has {GOOGLE_CONFIG_NAME} but no TF1 checkpoint (expected "
            "model.ckpt-best.index, model.ckpt-<step>.index or variables/variables.index)"
        )
    try:
        reader = tf.train.load_checkpoint(prefix)
        stored = reader.get_variable_to_shape_map()
    except (tf.errors.OpError, ValueError) as e:
        raise CheckpointError(f"cannot read checkpoint {prefix}: "
                              f"{str(e).splitlines()[0][:300]}") from None
    # TF-Hub modules prefix every name with module/; optimizer slots (adam_m, lamb_v, ...) and
    # global_step are never looked up, so they are ignored.
    by_name = {(n[len(TFHUB_PREFIX):] if n.startswith(TFHUB_PREFIX) else n): n for n in stored}
    marker = "bert/encoder/transformer/group_0/inner_group_0/attention_1/self/query/kernel"
    if marker not in by_name:
        sample = ", ".join(sorted(by_name)[:3])
        raise CheckpointError(f"{prefix} does not hold ALBERT weights under Google's names (no "
                              f"{marker}; found e.g. {sample})")

    bias_shape = stored.get(by_name.get("output_bias", ""))
    model = cls(config, **cls.head_options(prefix, options or {},
                                           None if bias_shape is None else int(bias_shape[0]),
                                           None))
    model.build_for_config()
    names = google_variables(model)
    state = {}
    for name, _, _ in names:
        if name in by_name:
            try:
                state[name] = reader.get_tensor(by_name[name])
            except tf.errors.OpError as e:
                raise CheckpointError(f"cannot read {name} from {prefix}: "
                                      f"{str(e).splitlines()[0][:300]}") from None
    projection = "bert/encoder/embedding_hidden_mapping_in"
    if f"{projection}/kernel" not in state and config.embedding_size == config.hidden_size:
        # Google's encoder skips the E -> H projection when E == H; ours always has one, so it
        # becomes the identity.
        state[f"{projection}/kernel"] = np.eye(config.hidden_size, dtype=np.float32)
        state[f"{projection}/bias"] = np.zeros(config.hidden_size, dtype=np.float32)
    optional = {name for name, _, _ in names if not name.startswith("bert/")}
    optional |= {name for name, _, _ in names if name.startswith("bert/pooler/")}
    assign(model, state, names, prefix, optional, require_heads)
    return model
