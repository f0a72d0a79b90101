"""What the tests of albert.io share, as fixtures (a test file imports no other test file): a
tiny config and a Hugging Face directory saved from it; Google ALBERT release directories written
from a Hugging Face PyTorch model (the layouts albert.io.google_tf1 reads, written independently
of it)."""

import json

import numpy as np
import pytest
import transformers

from albert import AlbertConfig, AlbertForPreTraining
from albert.io.pretrained import save_pretrained


def tiny():
    return AlbertConfig(vocab_size=50, embedding_size=8, hidden_size=16, num_hidden_layers=1,
                        num_attention_heads=2, intermediate_size=20, max_position_embeddings=16)


@pytest.fixture(name="tiny")
def tiny_fixture():
    return tiny


@pytest.fixture
def saved(tmp_path):
    model = AlbertForPreTraining(tiny()).build_for_config()
    save_pretrained(model, tmp_path / "ckpt")
    return tmp_path / "ckpt"


# -- Google TF1 checkpoints -------------------------------------------------------------------
# A Hugging Face PyTorch ALBERT's weights are written under Google's TF1 names with the
# name-based tf.compat.v1 Saver, the layout of google-research/albert's releases; our import must
# reproduce the PyTorch logits. The name mapping below goes HF -> Google, written from the
# Google side's modeling.py / run_pretraining.py independently of albert.io.google_tf1's.


def hf_config(**overrides):
    # initializer_range 0.2 makes the FFN pre-activations O(1), where the tanh approximation of
    # GELU (Google's "gelu") and the exact erf form differ by more than the tolerance.
    base = dict(vocab_size=40, embedding_size=8, hidden_size=16, num_hidden_layers=2,
                num_attention_heads=2, intermediate_size=24, max_position_embeddings=24,
                hidden_act="gelu_new", initializer_range=0.2)
    return transformers.AlbertConfig(**{**base, **overrides})


def google_config(hf_cfg, **overrides):
    keys = ("vocab_size", "embedding_size", "hidden_size", "num_hidden_layers",
            "num_hidden_groups", "num_attention_heads", "intermediate_size", "inner_group_num",
            "max_position_embeddings", "type_vocab_size", "initializer_range")
    data = {k: getattr(hf_cfg, k) for k in keys}
    data.update(hidden_act="gelu", hidden_dropout_prob=0, attention_probs_dropout_prob=0,
                net_structure_type=0, gap_size=0, num_memory_blocks=0, down_scale_factor=1,
                layers_to_keep=[])
    data.update(overrides)
    return data


def google_tensors(hf_model) -> dict:
    """HF state dict -> {google_name: array}; torch Linear [out, in] -> TF1 kernel [in, out]."""
    sd = {k: v.detach().numpy().copy() for k, v in hf_model.state_dict().items()}
    cfg = hf_model.config
    out = {}

    def dense(google, hf):
        out[f"{google}/kernel"] = sd[f"{hf}.weight"].T
        out[f"{google}/bias"] = sd[f"{hf}.bias"]

    def norm(google, hf):
        out[f"{google}/gamma"] = sd[f"{hf}.weight"]
        out[f"{google}/beta"] = sd[f"{hf}.bias"]

    for name in ("word_embeddings", "position_embeddings", "token_type_embeddings"):
        out[f"bert/embeddings/{name}"] = sd[f"albert.embeddings.{name}.weight"]
    norm("bert/embeddings/LayerNorm", "albert.embeddings.LayerNorm")
    dense("bert/encoder/embedding_hidden_mapping_in", "albert.encoder.embedding_hidden_mapping_in")
    for g in range(cfg.num_hidden_groups):
        for i in range(cfg.inner_group_num):
            gp = f"bert/encoder/transformer/group_{g}/inner_group_{i}"
            hp = f"albert.encoder.albert_layer_groups.{g}.albert_layers.{i}"
            for part in ("query", "key", "value"):
                dense(f"{gp}/attention_1/self/{part}", f"{hp}.attention.{part}")
            dense(f"{gp}/attention_1/output/dense", f"{hp}.attention.dense")
            norm(f"{gp}/LayerNorm", f"{hp}.attention.LayerNorm")
            dense(f"{gp}/ffn_1/intermediate/dense", f"{hp}.ffn")
            dense(f"{gp}/ffn_1/intermediate/output/dense", f"{hp}.ffn_output")
            norm(f"{gp}/LayerNorm_1", f"{hp}.full_layer_layer_norm")
    if "albert.pooler.weight" in sd:
        dense("bert/pooler/dense", "albert.pooler")
    if "predictions.bias" in sd:
        dense("cls/predictions/transform/dense", "predictions.dense")
        norm("cls/predictions/transform/LayerNorm", "predictions.LayerNorm")
        out["cls/predictions/output_bias"] = sd["predictions.bias"]
        # Google's [2, H] layout, as HF's.
        out["cls/seq_relationship/output_weights"] = sd["sop_classifier.classifier.weight"]
        out["cls/seq_relationship/output_bias"] = sd["sop_classifier.classifier.bias"]
    if "qa_outputs.weight" in sd:
        out["cls/squad/output_weights"] = sd["qa_outputs.weight"]
        out["cls/squad/output_bias"] = sd["qa_outputs.bias"]
    return out


def write_tf1_checkpoint(tensors: dict, prefix, name_prefix: str = "") -> None:
    """Save with tf.compat.v1.train.Saver in a graph, plus what a training run also leaves:
    global_step and LAMB/Adam slots, which the import must ignore."""
    import tensorflow as tf

    extra = {"global_step": np.array(125000, dtype=np.int64)}
    for name, value in list(tensors.items())[:3]:
        extra[f"{name}/adam_m"] = np.full_like(value, 7.0)
        extra[f"{name}/lamb_v"] = np.full_like(value, -7.0)
    with tf.Graph().as_default():
        var_list = {f"{name_prefix}{name}": tf.compat.v1.Variable(value)
                    for name, value in {**tensors, **extra}.items()}
        saver = tf.compat.v1.train.Saver(var_list)
        with tf.compat.v1.Session() as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            saver.save(sess, str(prefix))


def google_dir(tmp_path, hf_model, layout="v2", config_overrides=None):
    """A Google ALBERT release directory holding hf_model's weights, in one of its layouts."""
    d = tmp_path / f"google_{layout}"
    d.mkdir()
    tensors = google_tensors(hf_model)
    data = google_config(hf_model.config, **(config_overrides or {}))
    if layout == "hub":  # TF-Hub v1 module: variables/ with module/ names, config in assets/
        (d / "assets").mkdir()
        (d / "assets" / "albert_config.json").write_text(json.dumps(data))
        (d / "assets" / "30k-clean.model").write_bytes(b"spm")
        write_tf1_checkpoint(tensors, d / "variables" / "variables", name_prefix="module/")
        return d
    (d / "albert_config.json").write_text(json.dumps(data))
    (d / "30k-clean.model").write_bytes(b"spm")
    if layout == "v1":
        # Two steps: the newest one must be read. The older holds other weights.
        write_tf1_checkpoint({k: v + 1.0 for k, v in tensors.items()}, d / "model.ckpt-500")
        write_tf1_checkpoint(tensors, d / "model.ckpt-1000")
    else:
        write_tf1_checkpoint(tensors, d / "model.ckpt-best")
    return d


@pytest.fixture(name="hf_config")
def hf_config_fixture():
    return hf_config


@pytest.fixture(name="google_config")
def google_config_fixture():
    return google_config


@pytest.fixture(name="google_tensors")
def google_tensors_fixture():
    return google_tensors


@pytest.fixture(name="write_tf1_checkpoint")
def write_tf1_checkpoint_fixture():
    return write_tf1_checkpoint


@pytest.fixture(name="google_dir")
def google_dir_fixture():
    return google_dir
