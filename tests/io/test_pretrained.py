"""Clear errors for checkpoint directories we cannot load."""

import json

import numpy as np
import pytest
import torch
import transformers
from safetensors.numpy import load_file, save_file

from albert import AlbertConfig, AlbertForPreTraining, CheckpointError
from albert.io.pretrained import load_pretrained, save_pretrained


def tiny():
    return AlbertConfig(vocab_size=50, embedding_size=8, hidden_size=16, num_hidden_layers=1,
                        num_attention_heads=2, intermediate_size=20, max_position_embeddings=16)


@pytest.fixture
def saved(tmp_path):
    model = AlbertForPreTraining(tiny()).build_for_config()
    save_pretrained(model, tmp_path / "ckpt")
    return tmp_path / "ckpt"


def test_missing_directory(tmp_path):
    with pytest.raises(CheckpointError, match="not found: .*nope"):
        load_pretrained(AlbertForPreTraining, tmp_path / "nope")


def test_missing_config(saved):
    (saved / "config.json").unlink()
    with pytest.raises(CheckpointError, match="has no config.json"):
        load_pretrained(AlbertForPreTraining, saved)


def test_missing_weights(saved):
    (saved / "model.safetensors").unlink()
    with pytest.raises(CheckpointError, match="expected model.safetensors or pytorch_model.bin"):
        load_pretrained(AlbertForPreTraining, saved)


def test_missing_tensor_is_named(saved):
    state = load_file(saved / "model.safetensors")
    del state["albert.encoder.albert_layer_groups.0.albert_layers.0.ffn.weight"]
    save_file(state, saved / "model.safetensors")
    with pytest.raises(CheckpointError, match="missing tensor .*albert_layers.0.ffn.weight"):
        load_pretrained(AlbertForPreTraining, saved)


def test_config_that_does_not_match_weights(saved):
    cfg = json.loads((saved / "config.json").read_text())
    cfg["intermediate_size"] = 24
    (saved / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(CheckpointError, match=r"ffn.weight has shape \(20, 16\)"):
        load_pretrained(AlbertForPreTraining, saved)


def test_requested_config_mismatch(saved):
    other = tiny()
    other.hidden_size = 32
    with pytest.raises(CheckpointError, match="hidden_size: checkpoint 16 vs requested 32"):
        load_pretrained(AlbertForPreTraining, saved, config=other)


def test_other_architecture(tmp_path):
    cfg = transformers.BertConfig(vocab_size=30, hidden_size=16, num_hidden_layers=1,
                                  num_attention_heads=2, intermediate_size=20)
    transformers.BertModel(cfg).save_pretrained(tmp_path)
    with pytest.raises(ValueError, match="'bert' model"):
        load_pretrained(AlbertForPreTraining, tmp_path)
    # Same weights under an ALBERT config: refused for lack of ALBERT tensors.
    (tmp_path / "config.json").write_text(json.dumps(tiny().to_dict()))
    with pytest.raises(CheckpointError, match="does not hold ALBERT weights"):
        load_pretrained(AlbertForPreTraining, tmp_path)


def test_pytorch_bin_checkpoint(tmp_path):
    torch.manual_seed(0)
    hf = transformers.AlbertForPreTraining(transformers.AlbertConfig(**tiny().to_dict())).eval()
    tiny().to_json_file(tmp_path)
    torch.save(hf.state_dict(), tmp_path / "pytorch_model.bin")
    ours = load_pretrained(AlbertForPreTraining, tmp_path)
    ids = np.array([[2, 10, 11, 3]])
    with torch.no_grad():
        ref = hf(input_ids=torch.tensor(ids)).prediction_logits.numpy()
    np.testing.assert_allclose(ours({"input_ids": ids})["mlm_logits"], ref, atol=1e-4)


def test_save_replaces_existing_atomically(saved):
    model = AlbertForPreTraining(tiny()).build_for_config()
    save_pretrained(model, saved)
    back = load_pretrained(AlbertForPreTraining, saved)
    np.testing.assert_array_equal(back.predictions.bias.numpy(), model.predictions.bias.numpy())
    leftovers = [p.name for p in saved.parent.iterdir() if p.name != "ckpt"]
    assert leftovers == []


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


INPUTS = dict(input_ids=np.array([[2, 10, 11, 12, 13, 3, 20, 21, 3, 0],
                                  [2, 30, 31, 3, 5, 6, 7, 8, 9, 3]]),
              attention_mask=np.array([[1] * 9 + [0], [1] * 10]),
              token_type_ids=np.array([[0] * 6 + [1] * 4, [0] * 4 + [1] * 6]))


def torch_inputs():
    return {k: torch.tensor(v) for k, v in INPUTS.items()}


@pytest.mark.parametrize("layout, overrides", [
    ("v2", {}),
    ("v1", dict(num_hidden_layers=4, num_hidden_groups=2, inner_group_num=2)),
    ("hub", dict(num_hidden_layers=6, num_hidden_groups=3, inner_group_num=1)),
])
def test_google_checkpoint_matches_pytorch(tmp_path, layout, overrides):
    from albert.io.pretrained import pretrained_kind, vocabulary_file

    torch.manual_seed(1)
    hf = transformers.AlbertForPreTraining(hf_config(**overrides)).eval()
    d = google_dir(tmp_path, hf, layout)
    assert pretrained_kind(d) == "google"
    expected_vocab = d / ("assets" if layout == "hub" else "") / "30k-clean.model"
    assert vocabulary_file(d) == str(expected_vocab)
    ours = load_pretrained(AlbertForPreTraining, d)
    assert ours.config.hidden_act == "gelu_new"
    assert (ours.config.num_hidden_groups, ours.config.inner_group_num) == \
        (hf.config.num_hidden_groups, hf.config.inner_group_num)
    out = ours(INPUTS)
    with torch.no_grad():
        ref = hf(**torch_inputs())
    mask = INPUTS["attention_mask"][..., None].astype(bool)
    np.testing.assert_allclose(np.where(mask, out["mlm_logits"], 0),
                               np.where(mask, ref.prediction_logits.numpy(), 0), atol=1e-4)
    np.testing.assert_allclose(out["sop_logits"], ref.sop_logits.numpy(), atol=1e-4)


def test_google_squad_head_and_shared_projection(tmp_path):
    """A fine-tuned SQuAD checkpoint (cls/squad) with embedding_size == hidden_size, where
    Google's encoder has no E -> H projection: ours runs it as the identity."""
    from albert import AlbertForQuestionAnswering

    torch.manual_seed(2)
    cfg = hf_config(embedding_size=16, num_hidden_layers=4, num_hidden_groups=2,
                    inner_group_num=2)
    hf = transformers.AlbertForQuestionAnswering(cfg).eval()
    with torch.no_grad():
        hf.albert.encoder.embedding_hidden_mapping_in.weight.copy_(torch.eye(16))
        hf.albert.encoder.embedding_hidden_mapping_in.bias.zero_()
    d = tmp_path / "squad"
    d.mkdir()
    (d / "albert_config.json").write_text(json.dumps(google_config(cfg)))
    tensors = google_tensors(hf)
    del tensors["bert/encoder/embedding_hidden_mapping_in/kernel"]
    del tensors["bert/encoder/embedding_hidden_mapping_in/bias"]
    write_tf1_checkpoint(tensors, d / "model.ckpt-best")
    ours = load_pretrained(AlbertForQuestionAnswering, d)
    out = ours(INPUTS)
    with torch.no_grad():
        ref = hf(**torch_inputs())
    np.testing.assert_allclose(out["start_logits"], ref.start_logits.numpy(), atol=1e-4)
    np.testing.assert_allclose(out["end_logits"], ref.end_logits.numpy(), atol=1e-4)


@pytest.mark.parametrize("field, value", [
    ("net_structure_type", 1), ("layers_to_keep", [0, 2]), ("down_scale_factor", 2),
    ("hidden_act", "tanh"),
])
def test_google_unsupported_config_is_refused(tmp_path, field, value):
    torch.manual_seed(0)
    hf = transformers.AlbertForPreTraining(hf_config()).eval()
    d = google_dir(tmp_path, hf, "v2", {field: value})
    with pytest.raises(CheckpointError, match=f"{field}.*{value!r}".replace("[", r"\[")):
        load_pretrained(AlbertForPreTraining, d)


def test_google_checkpoint_errors(tmp_path):
    torch.manual_seed(0)
    hf = transformers.AlbertForPreTraining(hf_config()).eval()
    d = google_dir(tmp_path, hf, "v2")
    tensors = google_tensors(hf)
    # A missing backbone tensor is named.
    del tensors["bert/encoder/transformer/group_0/inner_group_0/ffn_1/intermediate/dense/kernel"]
    for f in d.glob("model.ckpt-best*"):
        f.unlink()
    write_tf1_checkpoint(tensors, d / "model.ckpt-best")
    with pytest.raises(CheckpointError, match="missing tensor .*intermediate/dense/kernel"):
        load_pretrained(AlbertForPreTraining, d)
    # BERT's TF1 names are not ALBERT's.
    for f in d.glob("model.ckpt-best*"):
        f.unlink()
    write_tf1_checkpoint({"bert/encoder/layer_0/attention/self/query/kernel":
                          np.zeros((16, 16), np.float32)}, d / "model.ckpt-best")
    with pytest.raises(CheckpointError, match="does not hold ALBERT weights under Google's"):
        load_pretrained(AlbertForPreTraining, d)
    # Config without checkpoint, checkpoint without config.
    for f in d.glob("model.ckpt-best*"):
        f.unlink()
    with pytest.raises(CheckpointError, match="albert_config.json but no TF1 checkpoint"):
        load_pretrained(AlbertForPreTraining, d)
    write_tf1_checkpoint(google_tensors(hf), d / "model.ckpt-best")
    (d / "albert_config.json").unlink()
    with pytest.raises(CheckpointError, match="has no albert_config.json"):
        load_pretrained(AlbertForPreTraining, d)
    # A shape that does not match the config.
    (d / "albert_config.json").write_text(json.dumps(google_config(hf.config,
                                                                   intermediate_size=30)))
    with pytest.raises(CheckpointError, match=r"intermediate/dense/kernel has shape \(16, 24\)"):
        load_pretrained(AlbertForPreTraining, d)


def test_pretrained_kind_and_vocabulary_file(saved, tmp_path):
    from albert.io.pretrained import pretrained_kind, vocabulary_file

    assert pretrained_kind(saved) == "huggingface"
    assert vocabulary_file(saved) is None
    (saved / "spiece.model").write_bytes(b"spm")
    assert vocabulary_file(saved) == str(saved / "spiece.model")
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(CheckpointError, match="neither a Hugging Face .* nor a Google"):
        pretrained_kind(empty)
    assert vocabulary_file(empty) is None
    with pytest.raises(CheckpointError, match="not found"):
        pretrained_kind(tmp_path / "nope")


def test_load_model_reads_every_source_strictly(tmp_path):
    """load_model (export, answer): trainer checkpoints by directory or prefix, Google prefixes;
    a checkpoint without the requested head is refused instead of served with random weights."""
    import tensorflow as tf

    from albert import AlbertForQuestionAnswering
    from albert.io.pretrained import load_model

    model = AlbertForQuestionAnswering(tiny()).build_for_config()
    manager = tf.train.CheckpointManager(tf.train.Checkpoint(model=model), str(tmp_path / "run"),
                                         max_to_keep=3)
    manager.save(checkpoint_number=3)
    first = model.qa_outputs.kernel.numpy().copy()
    model.qa_outputs.kernel.assign(first + 1.0)
    manager.save(checkpoint_number=9)
    tiny().to_json_file(tmp_path / "run" / "config.json")
    (tmp_path / "run" / "checkpoint").unlink()  # a lost index: the highest step is used
    np.testing.assert_array_equal(
        load_model(AlbertForQuestionAnswering, tmp_path / "run").qa_outputs.kernel.numpy(),
        first + 1.0)
    np.testing.assert_array_equal(
        load_model(AlbertForQuestionAnswering, tmp_path / "run" / "ckpt-3").qa_outputs.kernel
        .numpy(), first)
    with pytest.raises(CheckpointError, match="lacks weights the AlbertForPreTraining model "
                                              "needs .*predictions"):
        load_model(AlbertForPreTraining, tmp_path / "run")

    torch.manual_seed(3)
    hf = transformers.AlbertForPreTraining(hf_config()).eval()
    d = google_dir(tmp_path, hf, "v1")
    older = load_model(AlbertForPreTraining, d / "model.ckpt-500")  # an explicit step
    np.testing.assert_allclose(older.predictions.bias.numpy(),
                               hf.predictions.bias.detach().numpy() + 1.0)
    with pytest.raises(CheckpointError, match="missing cls/squad/output_weights"):
        load_model(AlbertForQuestionAnswering, d)


# -- sequence classifiers ---------------------------------------------------------------------


def test_google_run_classifier_checkpoint_matches_pytorch(tmp_path):
    """google-research/albert's run_classifier keeps its head outside any scope:
    output_weights [num_labels, hidden] and output_bias; the label count comes from them."""
    from albert import AlbertForSequenceClassification

    torch.manual_seed(4)
    hf = transformers.AlbertForSequenceClassification(hf_config(num_labels=3)).eval()
    with torch.no_grad():
        hf.classifier.bias.add_(torch.randn(3))
    d = tmp_path / "glue"
    d.mkdir()
    (d / "albert_config.json").write_text(json.dumps(google_config(hf.config)))
    tensors = google_tensors(hf)
    tensors["output_weights"] = hf.classifier.weight.detach().numpy().copy()
    tensors["output_bias"] = hf.classifier.bias.detach().numpy().copy()
    write_tf1_checkpoint(tensors, d / "model.ckpt-best")
    ours = load_pretrained(AlbertForSequenceClassification, d)
    assert ours.num_labels == 3
    with torch.no_grad():
        ref = hf(**torch_inputs()).logits.numpy()
    np.testing.assert_allclose(ours(INPUTS)["logits"], ref, atol=1e-4)


def test_sequence_classifier_label_count_and_names(tmp_path):
    import tensorflow as tf

    from albert import AlbertForSequenceClassification
    from albert.io.pretrained import load_model

    pre = AlbertForPreTraining(tiny()).build_for_config()
    save_pretrained(pre, tmp_path / "pre")
    # From a pretraining export: the backbone is loaded, the head is new, sized as asked.
    fresh = load_pretrained(AlbertForSequenceClassification, tmp_path / "pre", num_labels=5)
    assert fresh.num_labels == 5 and fresh.label_names is None
    np.testing.assert_array_equal(fresh.albert.pooler.kernel.numpy(),
                                  pre.albert.pooler.kernel.numpy())
    assert load_pretrained(AlbertForSequenceClassification, tmp_path / "pre").num_labels == 2
    with pytest.raises(CheckpointError, match="lacks weights .* classifier.weight"):
        load_model(AlbertForSequenceClassification, tmp_path / "pre")  # no head to predict with

    # Label names travel as id2label; the count is read back from the classifier.
    model = AlbertForSequenceClassification(tiny(), num_labels=3,
                                            label_names=["neg", "neu", "pos"])
    model.build_for_config()
    save_pretrained(model, tmp_path / "cls")
    config = json.loads((tmp_path / "cls" / "config.json").read_text())
    assert config["id2label"] == {"0": "neg", "1": "neu", "2": "pos"}
    assert config["architectures"] == ["AlbertForSequenceClassification"]
    back = load_pretrained(AlbertForSequenceClassification, tmp_path / "cls")
    assert back.num_labels == 3 and back.label_names == ("neg", "neu", "pos")
    np.testing.assert_array_equal(back.classifier.kernel.numpy(), model.classifier.kernel.numpy())
    with pytest.raises(CheckpointError, match="holds a classifier for 3 label.*not the 4 asked"):
        load_pretrained(AlbertForSequenceClassification, tmp_path / "cls", num_labels=4)

    # A trainer checkpoint: the label count is read from the stored classifier.
    manager = tf.train.CheckpointManager(tf.train.Checkpoint(model=model), str(tmp_path / "run"),
                                         max_to_keep=1)
    manager.save(checkpoint_number=7)
    tiny().to_json_file(tmp_path / "run" / "config.json")
    loaded = load_model(AlbertForSequenceClassification, tmp_path / "run")
    assert loaded.num_labels == 3
    np.testing.assert_array_equal(loaded.classifier.bias.numpy(), model.classifier.bias.numpy())
    with pytest.raises(CheckpointError, match="holds a classifier for 3 label"):
        load_model(AlbertForSequenceClassification, tmp_path / "run", num_labels=2)
