"""Hugging Face ALBERT checkpoints <-> our Keras models.

A HF ALBERT directory holds `config.json` and `model.safetensors` (or `pytorch_model.bin`), and
optionally `spiece.model`. Tensor names are the PyTorch state-dict names; Linear weights are stored
[out, in] where our Dense kernels are [in, out], so those are transposed on the way through.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import tempfile

import numpy as np

from albert.config import AlbertConfig

logger = logging.getLogger(__name__)

SAFETENSORS_NAME = "model.safetensors"
PYTORCH_NAME = "pytorch_model.bin"


class CheckpointError(ValueError):
    """A checkpoint directory that cannot be loaded; the message names the file and the problem."""


def _dense(prefix, layer):
    return [(f"{prefix}.weight", layer.kernel, True), (f"{prefix}.bias", layer.bias, False)]


def _norm(prefix, layer):
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
    if hasattr(model, "predictions"):
        head = model.predictions
        out += [
            ("predictions.bias", head.bias, False),
            *_dense("predictions.dense", head.dense),
            *_norm("predictions.LayerNorm", head.layer_norm),
        ]
    if hasattr(model, "sop_classifier"):
        out += _dense("sop_classifier.classifier", model.sop_classifier)
    if hasattr(model, "qa_outputs"):
        out += _dense("qa_outputs", model.qa_outputs)
    return out


def model_variables(model):
    return backbone_variables(model.albert) + head_variables(model)


def _read_state_dict(directory: str) -> dict[str, np.ndarray]:
    st_path = os.path.join(directory, SAFETENSORS_NAME)
    pt_path = os.path.join(directory, PYTORCH_NAME)
    if os.path.exists(st_path):
        from safetensors.numpy import load_file

        try:
            return load_file(st_path)
        except Exception as e:  # safetensors raises several types for corrupt files
            raise CheckpointError(f"cannot read {st_path}: {e}") from None
    if os.path.exists(pt_path):
        try:
            import torch
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


def _normalize_names(state: dict[str, np.ndarray], directory: str) -> dict[str, np.ndarray]:
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


def load_pretrained(cls, path, config: AlbertConfig | None = None):
    """Build `cls` from a local HF-format ALBERT directory and load its weights.

    Heads the checkpoint lacks (a QA head when starting from a pretraining checkpoint) keep their
    fresh initialisation and are logged; any missing backbone tensor or shape mismatch is an error.
    """
    directory = os.fspath(path)
    if not os.path.isdir(directory):
        raise CheckpointError(f"checkpoint directory not found: {directory}")
    config_path = os.path.join(directory, "config.json")
    if not os.path.exists(config_path):
        raise CheckpointError(f"{directory} has no config.json")
    file_config = AlbertConfig.from_json_file(config_path)
    if config is not None and config != file_config:
        diffs = [
            f"{k}: checkpoint {getattr(file_config, k)!r} vs requested {getattr(config, k)!r}"
            for k in file_config.__dataclass_fields__
            if getattr(file_config, k) != getattr(config, k)
            and k not in ("hidden_dropout_prob", "attention_probs_dropout_prob",
                          "classifier_dropout_prob")
        ]
        if diffs:
            raise CheckpointError(
                f"config of {directory} does not match the requested model: " + "; ".join(diffs)
            )
    else:
        config = file_config
    state = _normalize_names(_read_state_dict(directory), directory)

    model = cls(config)
    model.build_for_config()
    backbone = backbone_variables(model.albert)
    heads = head_variables(model)
    missing_heads = []
    for name, var, transpose in backbone + heads:
        if name not in state:
            if (name, var, transpose) in backbone and not name.startswith("albert.pooler"):
                raise CheckpointError(f"{directory} is missing tensor {name}")
            missing_heads.append(name)
            continue
        value = state[name].T if transpose else state[name]
        if tuple(value.shape) != tuple(var.shape):
            raise CheckpointError(
                f"{directory}: tensor {name} has shape {tuple(state[name].shape)}, the model "
                f"expects {tuple(var.shape)[::-1] if transpose else tuple(var.shape)}"
            )
        var.assign(value.astype(np.float32))
    if missing_heads:
        logger.warning("newly initialised (not in %s): %s", directory, ", ".join(missing_heads))
    return model


def save_pretrained(model, path, spm_model: str | None = None) -> None:
    """Write config.json + model.safetensors (+ spiece.model) so transformers can load the dir.

    Written to a temporary sibling directory and renamed into place, so an interrupted save never
    leaves a half-written checkpoint under `path`.
    """
    from safetensors.numpy import save_file

    path = os.fspath(path)
    parent = os.path.dirname(os.path.abspath(path))
    os.makedirs(parent, exist_ok=True)
    if getattr(model.config, "pre_layer_norm", False):
        logger.warning(
            "exporting a pre-LayerNorm ALBERT: albert.from_pretrained loads it, but "
            "transformers' AlbertModel has no pre-LN variant and would compute something else"
        )
    tensors = {}
    for name, var, transpose in model_variables(model):
        value = np.asarray(var.numpy(), dtype=np.float32)
        tensors[name] = np.ascontiguousarray(value.T if transpose else value)
    if "predictions.bias" in tensors:
        # HF ties decoder.bias to predictions.bias; writing both keeps older loaders happy.
        tensors["predictions.decoder.bias"] = tensors["predictions.bias"].copy()
    tmp = tempfile.mkdtemp(prefix=".tmp-", dir=parent)
    try:
        config = model.config.to_dict()
        config["architectures"] = [_hf_architecture(model)]
        with open(os.path.join(tmp, "config.json"), "w", encoding="utf-8") as f:
            json.dump(config, f, indent=2, sort_keys=True)
            f.write("\n")
        save_file(tensors, os.path.join(tmp, SAFETENSORS_NAME), metadata={"format": "pt"})
        if spm_model:
            from albert.tokenization import write_tokenizer_files

            write_tokenizer_files(spm_model, tmp)
        if os.path.isdir(path):
            old = path.rstrip("/") + ".old"
            shutil.rmtree(old, ignore_errors=True)
            os.rename(path, old)
            os.rename(tmp, path)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.rename(tmp, path)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _hf_architecture(model) -> str:
    name = type(model).__name__
    return name if name.startswith("Albert") else "AlbertForPreTraining"
