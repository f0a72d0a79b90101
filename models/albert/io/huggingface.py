"""Hugging Face ALBERT directories: `config.json` with `model.safetensors` (or
`pytorch_model.bin`) and optionally `spiece.model`, read into our models and written from them.

Tensor names are the PyTorch state-dict names of transformers' Albert* classes. Its Linear
weights are stored [out, in] where our Dense kernels are [in, out], so those are transposed on
the way through. The model classes come in as arguments (they declare `heads` and
`head_options`): this module never imports albert.model.modeling.
"""

from __future__ import annotations

import json
import logging
import os

import numpy as np
from safetensors.numpy import load_file, save_file

from albert.data.tokenization import write_tokenizer_files
from albert.errors import CheckpointError
from albert.fs import take_umask_mode
from albert.io.weights import assign, check_config
from albert.model.config import AlbertConfig

logger = logging.getLogger(__name__)

SAFETENSORS_NAME = "model.safetensors"
PYTORCH_NAME = "pytorch_model.bin"
HF_VOCAB_NAME = "spiece.model"


def _dense(prefix, layer):
    """A Dense layer's [(hf_name, variable, transpose)] under the Hugging Face `prefix`."""
    return [(f"{prefix}.weight", layer.kernel, True), (f"{prefix}.bias", layer.bias, False)]


def _norm(prefix, layer):
    """A LayerNormalization's [(hf_name, variable, transpose)] under the Hugging Face `prefix`."""
    return [(f"{prefix}.weight", layer.gamma, False), (f"{prefix}.bias", layer.beta, False)]


def backbone_variables(backbone, prefix: str = "albert"):
    """[(hf_name, variable, transpose)] for the embeddings, encoder and pooler."""
    emb, enc = backbone.embeddings, backbone.encoder
    out = [
        (f"{prefix}.embeddings.word_embeddings.weight", emb.word_embeddings, False),
        (f"{prefix}.embeddings.position_embeddings.weight", emb.position_embeddings, False),
        (f"{prefix}.embeddings.token_type_embeddings.weight", emb.token_type_embeddings, False),
        *_norm(f"{prefix}.embeddings.LayerNorm", emb.layer_norm),
        *_dense(f"{prefix}.encoder.embedding_hidden_mapping_in", enc.embedding_projection),
    ]
    for g, group in enumerate(enc.groups):
        for i, layer in enumerate(group):
            p = f"{prefix}.encoder.albert_layer_groups.{g}.albert_layers.{i}"
            out += [
                *_dense(f"{p}.attention.query", layer.query),
                *_dense(f"{p}.attention.key", layer.key),
                *_dense(f"{p}.attention.value", layer.value),
                *_dense(f"{p}.attention.dense", layer.attention_output),
                *_norm(f"{p}.attention.LayerNorm", layer.attention_norm),
                *_dense(f"{p}.ffn", layer.ffn),
                *_dense(f"{p}.ffn_output", layer.ffn_output),
                *_norm(f"{p}.full_layer_layer_norm", layer.ffn_norm),
            ]
    if enc.final_norm is not None:
        # Pre-LN only; not an HF name (HF has no pre-LN ALBERT), used by our own round trips.
        out += _norm(f"{prefix}.encoder.final_layer_norm", enc.final_norm)
    if backbone.pooler is not None:
        out += _dense(f"{prefix}.pooler", backbone.pooler)
    return out


def head_variables(model):
    """[(hf_name, variable, transpose)] for the task heads of `model`."""
    out = []
    if "predictions" in model.heads:
        head = model.predictions
        out += [
            ("predictions.bias", head.bias, False),
            *_dense("predictions.dense", head.dense),
            *_norm("predictions.LayerNorm", head.layer_norm),
        ]
    if "sop_classifier" in model.heads:
        out += _dense("sop_classifier.classifier", model.sop_classifier)
    if "qa_outputs" in model.heads:
        out += _dense("qa_outputs", model.qa_outputs)
    if "classifier" in model.heads:
        out += _dense("classifier", model.classifier)
    return out


def model_variables(model):
    return backbone_variables(model.albert) + head_variables(model)


# -- reading --------------------------------------------------------------------------------------


def read_state_dict(directory: str) -> dict[str, np.ndarray]:
    """The tensors of model.safetensors, else of pytorch_model.bin (which needs torch)."""
    st_path = os.path.join(directory, SAFETENSORS_NAME)
    pt_path = os.path.join(directory, PYTORCH_NAME)
    if os.path.exists(st_path):
        try:
            return load_file(st_path)
        except Exception as e:  # safetensors raises several types for corrupt files
            raise CheckpointError(f"cannot read {st_path}: {e}") from None
    if os.path.exists(pt_path):
        try:
            import torch  # optional and heavy: only a pytorch_model.bin needs it
        except ImportError:
            raise CheckpointError(
                f"{pt_path} is a PyTorch pickle and reading it needs torch; install torch or "
                f"convert it to {SAFETENSORS_NAME}"
            ) from None
        state = torch.load(pt_path, map_location="cpu", weights_only=True)
        return {k: v.float().numpy() for k, v in state.items()}
    raise CheckpointError(
        f"no weights in {directory}: expected {SAFETENSORS_NAME} or {PYTORCH_NAME}"
    )


def normalize_names(state: dict[str, np.ndarray], directory: str) -> dict[str, np.ndarray]:
    """Bare AlbertModel checkpoints have no 'albert.' prefix; other architectures are refused."""
    if not any(k.startswith("albert.") for k in state):
        if "encoder.embedding_hidden_mapping_in.weight" in state:
            state = {f"albert.{k}": v for k, v in state.items()}
    # The E -> H projection exists only in ALBERT (BERT shares the embedding names).
    marker = "albert.encoder.embedding_hidden_mapping_in.weight"
    if marker not in state:
        sample = ", ".join(sorted(state)[:3])
        raise CheckpointError(
            f"{directory} does not hold ALBERT weights (no {marker}; found e.g. {sample})"
        )
    return state


def load_huggingface(cls, directory: str, config: AlbertConfig | None, require_heads: bool,
                     options: dict):
    """`cls` built from a Hugging Face directory's config.json, with its weights (see
    io.pretrained.load_pretrained for what may be missing)."""
    config_path = os.path.join(directory, "config.json")
    if not os.path.exists(config_path):
        raise CheckpointError(f"{directory} has no config.json")
    config = check_config(directory, AlbertConfig.from_json_file(config_path), config)
    with open(config_path, encoding="utf-8") as f:
        id2label = json.load(f).get("id2label")
    has_weights = any(os.path.exists(os.path.join(directory, n))
                      for n in (SAFETENSORS_NAME, PYTORCH_NAME))
    if not has_weights and os.path.exists(os.path.join(directory, "checkpoint")):
        raise CheckpointError(
            f"{directory} is a training checkpoint directory, not a Hugging Face export (no "
            f"{SAFETENSORS_NAME}); start from it with --load_from checkpoint"
        )
    state = normalize_names(read_state_dict(directory), directory)
    stored = state.get("classifier.bias")

    model = cls(config, **cls.head_options(directory, options,
                                           None if stored is None else int(stored.shape[0]),
                                           id2label))
    model.build_for_config()
    backbone = backbone_variables(model.albert)
    optional = {name for name, _, _ in head_variables(model)}
    optional |= {name for name, _, _ in backbone if name.startswith("albert.pooler")}
    assign(model, state, backbone + head_variables(model), directory, optional, require_heads)
    return model


# -- writing --------------------------------------------------------------------------------------


def state_dict(model) -> dict[str, np.ndarray]:
    """`model`'s weights as transformers' state dict names and lays them out (float32, Linear
    weights [out, in])."""
    tensors = {}
    for name, var, transpose in model_variables(model):
        value = np.asarray(var.numpy(), dtype=np.float32)
        tensors[name] = np.ascontiguousarray(value.T if transpose else value)
    if "predictions.bias" in tensors:
        # HF ties decoder.bias to predictions.bias; writing both keeps older loaders happy.
        tensors["predictions.decoder.bias"] = tensors["predictions.bias"].copy()
    return tensors


def write_huggingface(model, directory: str, spm_model: str | None = None,
                      extra_json: dict | None = None) -> None:
    """Write config.json + model.safetensors (+ the tokenizer files of `spm_model`, + each
    {file name: object} of extra_json) into the existing `directory`, so that transformers loads
    it. Not atomic by itself: io.pretrained's save_pretrained and replace_pretrained write
    through albert.fs."""
    if getattr(model.config, "pre_layer_norm", False):
        logger.warning(
            "exporting a pre-LayerNorm ALBERT: albert.load_pretrained loads it, but "
            "transformers' AlbertModel has no pre-LN variant and would compute something else"
        )
    tensors = state_dict(model)
    config = model.config.to_dict()
    config["architectures"] = [_architecture(model)]
    config.update(_classifier_config(model))
    with open(os.path.join(directory, "config.json"), "w", encoding="utf-8") as f:
        json.dump(config, f, indent=2, sort_keys=True)
        f.write("\n")
    save_file(tensors, os.path.join(directory, SAFETENSORS_NAME), metadata={"format": "pt"})
    take_umask_mode(os.path.join(directory, SAFETENSORS_NAME))  # save_file leaves it 0600
    if spm_model:
        write_tokenizer_files(spm_model, directory)
    for name, obj in (extra_json or {}).items():
        with open(os.path.join(directory, name), "w", encoding="utf-8") as f:
            json.dump(obj, f, indent=2)


def _classifier_config(model) -> dict:
    """The config.json keys transformers reads for a sequence classifier: the label count (as
    id2label / label2id, from which it derives num_labels) and the problem type (its loss)."""
    if "classifier" not in model.heads:
        return {}
    names = model.label_names or [f"LABEL_{i}" for i in range(model.num_labels)]
    return {"id2label": {str(i): name for i, name in enumerate(names)},
            "label2id": {name: i for i, name in enumerate(names)},
            "problem_type": ("regression" if model.num_labels == 1
                             else "single_label_classification")}


def _architecture(model) -> str:
    """config.json's `architectures`: transformers' class of the same name; a subclass named
    otherwise (which transformers cannot know) as the pretraining model."""
    name = type(model).__name__
    return name if name.startswith("Albert") else "AlbertForPreTraining"
