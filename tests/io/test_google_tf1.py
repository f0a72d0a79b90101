"""albert.io.google_tf1: Google's ALBERT releases (v1, v2, TF-Hub layouts, fine-tuned heads) read
into our models reproduce a Hugging Face PyTorch model's logits; what cannot be read is refused
by name. The release directories are written by the fixtures of conftest.py."""

import json

import numpy as np
import pytest
import torch
import transformers

from albert import AlbertForPreTraining, CheckpointError
from albert.io.pretrained import load_pretrained

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
def test_google_checkpoint_matches_pytorch(tmp_path, layout, overrides, hf_config, google_dir):
    from albert.io.model_dir import pretrained_kind, vocabulary_file

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


def test_google_squad_head_and_shared_projection(tmp_path, hf_config, google_config, google_tensors,
                                                 write_tf1_checkpoint):
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
def test_google_unsupported_config_is_refused(tmp_path, field, value, hf_config, google_dir):
    torch.manual_seed(0)
    hf = transformers.AlbertForPreTraining(hf_config()).eval()
    d = google_dir(tmp_path, hf, "v2", {field: value})
    with pytest.raises(CheckpointError, match=f"{field}.*{value!r}".replace("[", r"\[")):
        load_pretrained(AlbertForPreTraining, d)


def test_google_checkpoint_errors(tmp_path, hf_config, google_dir, google_tensors, google_config,
                                  write_tf1_checkpoint):
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


def test_google_run_classifier_checkpoint_matches_pytorch(tmp_path, hf_config, google_config,
                                                          google_tensors, write_tf1_checkpoint):
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
