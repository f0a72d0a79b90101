"""albert.io.weights: a checkpoint's tensors checked as they go into a model: a missing tensor,
a shape that does not fit, a config that differs from the requested one, each named."""

import json

import pytest
from safetensors.numpy import load_file, save_file

from albert import AlbertForPreTraining, CheckpointError
from albert.io.pretrained import load_pretrained


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


def test_requested_config_mismatch(saved, tiny):
    other = tiny()
    other.hidden_size = 32
    with pytest.raises(CheckpointError, match="hidden_size: checkpoint 16 vs requested 32"):
        load_pretrained(AlbertForPreTraining, saved, config=other)
