"""Clear errors for checkpoint directories we cannot load."""

import json

import numpy as np
import pytest
import torch
import transformers
from safetensors.numpy import load_file, save_file

from albert import AlbertConfig, AlbertForPreTraining, CheckpointError


def tiny():
    return AlbertConfig(vocab_size=50, embedding_size=8, hidden_size=16, num_hidden_layers=1,
                        num_attention_heads=2, intermediate_size=20, max_position_embeddings=16)


@pytest.fixture
def saved(tmp_path):
    model = AlbertForPreTraining(tiny()).build_for_config()
    model.save_pretrained(tmp_path / "ckpt")
    return tmp_path / "ckpt"


def test_missing_directory(tmp_path):
    with pytest.raises(CheckpointError, match="not found: .*nope"):
        AlbertForPreTraining.from_pretrained(tmp_path / "nope")


def test_missing_config(saved):
    (saved / "config.json").unlink()
    with pytest.raises(CheckpointError, match="has no config.json"):
        AlbertForPreTraining.from_pretrained(saved)


def test_missing_weights(saved):
    (saved / "model.safetensors").unlink()
    with pytest.raises(CheckpointError, match="expected model.safetensors or pytorch_model.bin"):
        AlbertForPreTraining.from_pretrained(saved)


def test_missing_tensor_is_named(saved):
    state = load_file(saved / "model.safetensors")
    del state["albert.encoder.albert_layer_groups.0.albert_layers.0.ffn.weight"]
    save_file(state, saved / "model.safetensors")
    with pytest.raises(CheckpointError, match="missing tensor .*albert_layers.0.ffn.weight"):
        AlbertForPreTraining.from_pretrained(saved)


def test_config_that_does_not_match_weights(saved):
    cfg = json.loads((saved / "config.json").read_text())
    cfg["intermediate_size"] = 24
    (saved / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(CheckpointError, match=r"ffn.weight has shape \(20, 16\)"):
        AlbertForPreTraining.from_pretrained(saved)


def test_requested_config_mismatch(saved):
    other = tiny()
    other.hidden_size = 32
    with pytest.raises(CheckpointError, match="hidden_size: checkpoint 16 vs requested 32"):
        AlbertForPreTraining.from_pretrained(saved, config=other)


def test_other_architecture(tmp_path):
    cfg = transformers.BertConfig(vocab_size=30, hidden_size=16, num_hidden_layers=1,
                                  num_attention_heads=2, intermediate_size=20)
    transformers.BertModel(cfg).save_pretrained(tmp_path)
    with pytest.raises(ValueError, match="'bert' model"):
        AlbertForPreTraining.from_pretrained(tmp_path)
    # Same weights under an ALBERT config: refused for lack of ALBERT tensors.
    (tmp_path / "config.json").write_text(json.dumps(tiny().to_dict()))
    with pytest.raises(CheckpointError, match="does not hold ALBERT weights"):
        AlbertForPreTraining.from_pretrained(tmp_path)


def test_pytorch_bin_checkpoint(tmp_path):
    torch.manual_seed(0)
    hf = transformers.AlbertForPreTraining(transformers.AlbertConfig(**tiny().to_dict())).eval()
    tiny().to_json_file(tmp_path)
    torch.save(hf.state_dict(), tmp_path / "pytorch_model.bin")
    ours = AlbertForPreTraining.from_pretrained(tmp_path)
    ids = np.array([[2, 10, 11, 3]])
    with torch.no_grad():
        ref = hf(input_ids=torch.tensor(ids)).prediction_logits.numpy()
    np.testing.assert_allclose(ours({"input_ids": ids})["mlm_logits"], ref, atol=1e-4)


def test_save_replaces_existing_atomically(saved):
    model = AlbertForPreTraining(tiny()).build_for_config()
    model.save_pretrained(saved)
    back = AlbertForPreTraining.from_pretrained(saved)
    np.testing.assert_array_equal(back.predictions.bias.numpy(), model.predictions.bias.numpy())
    leftovers = [p.name for p in saved.parent.iterdir() if p.name != "ckpt"]
    assert leftovers == []
