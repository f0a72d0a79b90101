"""albert.io.huggingface: a Hugging Face directory without a config or weights, of another
architecture, or in PyTorch's pickle format."""

import json

import numpy as np
import pytest
import tensorflow as tf
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


def test_every_dense_kernel_is_transposed_into_the_hugging_face_layout(tiny):
    """Issue 50: the pooler's kernel written as it is, not transposed, passed every shape check
    (it is square, as are query, key, value and the attention output) and was caught only end
    to end. Here in-process: each exported Linear weight is its Keras kernel transposed, and
    transformers' PyTorch model built from the exported tensors pools and classifies as ours."""
    from albert import AlbertForSequenceClassification
    from albert.io.huggingface import model_variables, state_dict

    model = AlbertForSequenceClassification(tiny(), num_labels=3).build_for_config()
    rng = np.random.default_rng(0)
    for var in model.weights:  # no kernel equal to its transpose, biases not zero
        var.assign(rng.normal(0, 0.3, var.shape))
    state = state_dict(model)
    square = 0
    for name, var, transposed in model_variables(model):
        value = var.numpy()
        if len(value.shape) == 2 and name.endswith(".weight") and "embeddings" not in name:
            assert transposed, name
            np.testing.assert_array_equal(state[name], value.T, err_msg=name)
            square += value.shape[0] == value.shape[1]
    assert square >= 5  # the pooler, query, key, value, the attention output

    config = transformers.AlbertConfig(**tiny().to_dict(), num_labels=3)
    hf = transformers.AlbertForSequenceClassification(config).eval()
    missing, unexpected = hf.load_state_dict({k: torch.from_numpy(v) for k, v in state.items()},
                                             strict=False)
    assert not unexpected and all("position_ids" in k for k in missing), (missing, unexpected)
    ids = np.array([[2, 7, 11, 13, 3, 0], [2, 5, 3, 9, 17, 3]])
    mask = np.array([[1, 1, 1, 1, 1, 0], [1, 1, 1, 1, 1, 1]])
    with torch.no_grad():
        ref = hf(input_ids=torch.tensor(ids), attention_mask=torch.tensor(mask),
                 output_hidden_states=True)
        pooled = hf.albert(input_ids=torch.tensor(ids),
                           attention_mask=torch.tensor(mask)).pooler_output.numpy()
    ours = model.albert(*(tf.constant(x, tf.int32) for x in (ids, np.zeros_like(ids), mask))
                        )[1].numpy()
    np.testing.assert_allclose(ours, pooled, atol=1e-4)
    logits = model({"input_ids": ids, "attention_mask": mask})["logits"].numpy()
    np.testing.assert_allclose(logits, ref.logits.numpy(), atol=1e-4)
