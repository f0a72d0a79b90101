"""albert.io.huggingface: a Hugging Face directory without a config or weights, of another
architecture, or in PyTorch's pickle format."""

import json

import numpy as np
import pytest
import torch
import transformers

from albert import AlbertForPreTraining, CheckpointError
from albert.io.pretrained import load_pretrained


def test_missing_config(saved):
    (saved / "config.json").unlink()
    with pytest.raises(CheckpointError, match="has no config.json"):
        load_pretrained(AlbertForPreTraining, saved)


def test_missing_weights(saved):
    (saved / "model.safetensors").unlink()
    with pytest.raises(CheckpointError, match="expected model.safetensors or pytorch_model.bin"):
        load_pretrained(AlbertForPreTraining, saved)


def test_other_architecture(tmp_path, tiny):
    cfg = transformers.BertConfig(vocab_size=30, hidden_size=16, num_hidden_layers=1,
                                  num_attention_heads=2, intermediate_size=20)
    transformers.BertModel(cfg).save_pretrained(tmp_path)
    with pytest.raises(ValueError, match="'bert' model"):
        load_pretrained(AlbertForPreTraining, tmp_path)
    # Same weights under an ALBERT config: refused for lack of ALBERT tensors.
    (tmp_path / "config.json").write_text(json.dumps(tiny().to_dict()))
    with pytest.raises(CheckpointError, match="does not hold ALBERT weights"):
        load_pretrained(AlbertForPreTraining, tmp_path)


def test_pytorch_bin_checkpoint(tmp_path, tiny):
    torch.manual_seed(0)
    hf = transformers.AlbertForPreTraining(transformers.AlbertConfig(**tiny().to_dict())).eval()
    tiny().to_json_file(tmp_path)
    torch.save(hf.state_dict(), tmp_path / "pytorch_model.bin")
    ours = load_pretrained(AlbertForPreTraining, tmp_path)
    ids = np.array([[2, 10, 11, 3]])
    with torch.no_grad():
        ref = hf(input_ids=torch.tensor(ids)).prediction_logits.numpy()
    np.testing.assert_allclose(ours({"input_ids": ids})["mlm_logits"], ref, atol=1e-4)
