"""Checkpoints <-> our Keras models: Hugging Face directories, Google's TF1 releases, and the
trainer's own tf.train checkpoints.

- A Hugging Face ALBERT directory holds `config.json` and `model.safetensors` (or
  `pytorch_model.bin`), and optionally `spiece.model`. Tensor names are the PyTorch state-dict
  names; Linear weights are stored [out, in] where our Dense kernels are [in, out], so those are
  transposed on the way through.
- A Google ALBERT directory (google-research/albert releases) holds `albert_config.json`, a TF1
  checkpoint (`model.ckpt-best.*` in v2, `model.ckpt-<step>.*` in v1, or a TF-Hub module's
  `variables/variables.*` whose names start with `module/`) and `30k-clean.model`. Its kernels are
  [in, out] like ours; only the sentence-order and SQuAD output weights are [out, in].
- A trainer checkpoint is a tf.train.Checkpoint prefix (or a directory of them) with the model
  under `model/` and `config.json` beside it, as the trainer's CheckpointHandler
  writes them.

`load_pretrained` reads the first two (what `from_pretrained` takes); `load_model` reads all three.
"""

from __future__ import annotations

import json
import logging
import os
import re
import shutil

import numpy as np

from albert.errors import CheckpointError  # the one class; importable from here too
from albert.model.config import GOOGLE_CONFIG_NAME, AlbertConfig

logger = logging.getLogger(__name__)

SAFETENSORS_NAME = "model.safetensors"
PYTORCH_NAME = "pytorch_model.bin"
HF_VOCAB_NAME = "spiece.model"
GOOGLE_VOCAB_NAME = "30k-clean.model"
TFHUB_PREFIX = "module/"


def _dense_to_hf(prefix, layer):
    """A Dense layer's [(hf_name, variable, transpose)] under the Hugging Face `prefix`."""
    return [(f"{prefix}.weight", layer.kernel, True), (f"{prefix}.bias", layer.bias, False)]


def _norm_to_hf(prefix, layer):
    """A LayerNormalization's [(hf_name, variable, transpose)] under the Hugging Face `prefix`."""
    return [(f"{prefix}.weight", layer.gamma, False), (f"{prefix}.bias", layer.beta, False)]


def backbone_variables(backbone, prefix: str = "albert"):
    """[(hf_name, variable, transpose)] for the embeddings, encoder and pooler."""
    emb, enc = backbone.embeddings, backbone.encoder
    out = [
        (f"{prefix}.embeddings.word_embeddings.weight", emb.word_embeddings, False),
        (f"{prefix}.embeddings.position_embeddings.weight", emb.position_embeddings, False),
        (f"{prefix}.embeddings.token_type_embeddings.weight", emb.token_type_embeddings, False),
        *_norm_to_hf(f"{prefix}.embeddings.LayerNorm", emb.layer_norm),
        *_dense_to_hf(f"{prefix}.encoder.embedding_hidden_mapping_in", enc.embedding_projection),
    ]
    for g, group in enumerate(enc.groups):
        for i, layer in enumerate(group):
            p = f"{prefix}.encoder.albert_layer_groups.{g}.albert_layers.{i}"
            out += [
                *_dense_to_hf(f"{p}.attention.query", layer.query),
                *_dense_to_hf(f"{p}.attention.key", layer.key),
                *_dense_to_hf(f"{p}.attention.value", layer.value),
                *_dense_to_hf(f"{p}.attention.dense", layer.attention_output),
                *_norm_to_hf(f"{p}.attention.LayerNorm", layer.attention_norm),
                *_dense_to_hf(f"{p}.ffn", layer.ffn),
                *_dense_to_hf(f"{p}.ffn_output", layer.ffn_output),
                *_norm_to_hf(f"{p}.full_layer_layer_norm", layer.ffn_norm),
            ]
    if enc.final_norm is not None:
        # Pre-LN only; not an HF name (HF has no pre-LN ALBERT), used by our own round trips.
        out += _norm_to_hf(f"{prefix}.encoder.final_layer_norm", enc.final_norm)
    if backbone.pooler is not None:
        out += _dense_to_hf(f"{prefix}.pooler", backbone.pooler)
    return out


def head_variables(model):
    """[(hf_name, variable, transpose)] for the task heads of `model`."""
    out = []
    if "predictions" in model.heads:
        head = model.predictions
        out += [
            ("predictions.bias", head.bias, False),
            *_dense_to_hf("predictions.dense", head.dense),
            *_norm_to_hf("predictions.LayerNorm", head.layer_norm),
        ]
    if "sop_classifier" in model.heads:
        out += _dense_to_hf("sop_classifier.classifier", model.sop_classifier)
    if "qa_outputs" in model.heads:
        out += _dense_to_hf("qa_outputs", model.qa_outputs)
    if "classifier" in model.heads:
        out += _dense_to_hf("classifier", model.classifier)
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


# -- what a directory holds -------------------------------------------------------------------


def _google_config_path(directory: str) -> str | None:
    for candidate in (os.path.join(directory, GOOGLE_CONFIG_NAME),
                      os.path.join(directory, "assets", GOOGLE_CONFIG_NAME)):
        if os.path.isfile(candidate):
            return candidate
    return None


def google_checkpoint_prefix(directory: str) -> str | None:
    """The TF1 checkpoint of a Google ALBERT directory, as a prefix (without .index).

    Preference: model.ckpt-best (v2 releases), model.ckpt, the highest model.ckpt-<step> (v1
    releases, Estimator runs), then a TF-Hub module's variables/variables. None if none exists.
    """
    def exists(prefix):
        return os.path.isfile(prefix + ".index")

    for name in ("model.ckpt-best", "model.ckpt"):
        if exists(os.path.join(directory, name)):
            return os.path.join(directory, name)
    steps = []
    for name in os.listdir(directory):
        m = re.fullmatch(r"model\.ckpt-(\d+)\.index", name)
        if m:
            steps.append(int(m.group(1)))
    if steps:
        return os.path.join(directory, f"model.ckpt-{max(steps)}")
    hub = os.path.join(directory, "variables", "variables")
    return hub if exists(hub) else None


def pretrained_kind(path) -> str:
    """'google' or 'huggingface': which published layout the directory `path` holds.

    Google: albert_config.json (also under assets/, as TF-Hub modules keep it) or a
    model.ckpt* checkpoint. Hugging Face: config.json, model.safetensors or pytorch_model.bin.
    Anything else raises CheckpointError naming both layouts.
    """
    directory = os.fspath(path)
    if not os.path.isdir(directory):
        raise CheckpointError(f"checkpoint directory not found: {directory}")
    if _google_config_path(directory):
        return "google"
    prefix = google_checkpoint_prefix(directory)
    if prefix and not prefix.endswith(os.path.join("variables", "variables")):
        return "google"
    if any(os.path.exists(os.path.join(directory, name))
           for name in ("config.json", SAFETENSORS_NAME, PYTORCH_NAME)):
        return "huggingface"
    raise CheckpointError(
        f"{directory} is neither a Hugging Face ALBERT directory (config.json with "
        f"{SAFETENSORS_NAME} or {PYTORCH_NAME}) nor a Google ALBERT directory "
        f"({GOOGLE_CONFIG_NAME} with model.ckpt-*.index or a TF-Hub variables/ folder)"
    )


def vocabulary_file(path) -> str | None:
    """The SentencePiece model that comes with a model directory, or None.

    Looks for spiece.model (Hugging Face, our exports) and 30k-clean.model (Google), Google's
    name first in a Google directory, in the directory, its assets/ (TF-Hub modules, our
    SavedModels) and its final/ (a trainer checkpoint directory's last export). A checkpoint
    prefix is looked up in its directory.
    """
    directory = os.fspath(path)
    if not os.path.isdir(directory):
        if not os.path.isfile(directory + ".index"):
            return None
        directory = os.path.dirname(directory) or "."
    names = (HF_VOCAB_NAME, GOOGLE_VOCAB_NAME)
    if _google_config_path(directory):
        names = names[::-1]
    for folder in (directory, os.path.join(directory, "assets"), os.path.join(directory, "final")):
        for name in names:
            candidate = os.path.join(folder, name)
            if os.path.isfile(candidate):
                return candidate
    return None


# -- loading ----------------------------------------------------------------------------------


def _config_for(source: str, file_config: AlbertConfig, config: AlbertConfig | None):
    """The checkpoint's config, checked against a requested one (dropout may differ)."""
    if config is None:
        return file_config
    diffs = [
        f"{k}: checkpoint {getattr(file_config, k)!r} vs requested {getattr(config, k)!r}"
        for k in file_config.__dataclass_fields__
        if getattr(file_config, k) != getattr(config, k)
        and k not in ("hidden_dropout_prob", "attention_probs_dropout_prob",
                      "classifier_dropout_prob")
    ]
    if diffs:
        raise CheckpointError(
            f"config of {source} does not match the requested model: " + "; ".join(diffs)
        )
    return config


def _assign(model, state: dict, names, source: str, optional: set, require_heads: bool):
    """Copy state[name] into each (name, variable, transpose) of `names`, checking shapes.

    Names in `optional` (task heads, the pooler) may be absent: they keep their fresh
    initialisation and are logged, or raise with require_heads (inference must not run on
    random weights). Any other absence raises.
    """
    missing = []
    for name, var, transpose in names:
        if name not in state:
            if name not in optional:
                raise CheckpointError(f"{source} is missing tensor {name}")
            missing.append(name)
            continue
        value = state[name].T if transpose else state[name]
        if tuple(value.shape) != tuple(var.shape):
            raise CheckpointError(
                f"{source}: tensor {name} has shape {tuple(state[name].shape)}, the model "
                f"expects {tuple(var.shape)[::-1] if transpose else tuple(var.shape)}"
            )
        var.assign(np.asarray(value, dtype=np.float32))
    if missing and require_heads:
        raise CheckpointError(
            f"{source} lacks weights the {type(model).__name__} model needs (missing "
            f"{', '.join(missing)}): it was saved from another kind of model"
        )
    if missing:
        logger.warning("newly initialised (not in %s): %s", source, ", ".join(missing))


def load_pretrained(cls, path, config: AlbertConfig | None = None, require_heads: bool = False,
                    **options):
    """Build `cls` from a local Hugging Face or Google ALBERT directory and load its weights.

    The layout is detected by its files (pretrained_kind). Heads the checkpoint lacks (a QA head
    when starting from a pretraining checkpoint) keep their fresh initialisation and are logged,
    or raise CheckpointError with require_heads; a missing backbone tensor or a shape mismatch
    is always an error. options: num_labels / label_names of a sequence classifier (see
    the class's head_options).
    """
    directory = os.fspath(path)
    if pretrained_kind(directory) == "google":
        return _load_google(cls, directory, config, require_heads, options=options)
    config_path = os.path.join(directory, "config.json")
    if not os.path.exists(config_path):
        raise CheckpointError(f"{directory} has no config.json")
    config = _config_for(directory, AlbertConfig.from_json_file(config_path), config)
    with open(config_path, encoding="utf-8") as f:
        id2label = json.load(f).get("id2label")
    has_weights = any(os.path.exists(os.path.join(directory, n))
                      for n in (SAFETENSORS_NAME, PYTORCH_NAME))
    if not has_weights and os.path.exists(os.path.join(directory, "checkpoint")):
        raise CheckpointError(
            f"{directory} is a training checkpoint directory, not a Hugging Face export (no "
            f"{SAFETENSORS_NAME}); start from it with --load_from checkpoint"
        )
    state = _normalize_names(_read_state_dict(directory), directory)
    stored = state.get("classifier.bias")

    model = cls(config, **cls.head_options(directory, options,
                                           None if stored is None else int(stored.shape[0]),
                                           id2label))
    model.build_for_config()
    backbone = backbone_variables(model.albert)
    optional = {name for name, _, _ in head_variables(model)}
    optional |= {name for name, _, _ in backbone if name.startswith("albert.pooler")}
    _assign(model, state, backbone + head_variables(model), directory, optional, require_heads)
    return model


def _load_google(cls, directory: str, config: AlbertConfig | None, require_heads: bool,
                 prefix: str | None = None, options: dict | None = None):
    """A Google ALBERT directory (or one checkpoint `prefix` in it) -> `cls` with its weights."""
    import tensorflow as tf

    config_path = _google_config_path(directory)
    if config_path is None:
        raise CheckpointError(f"{directory} has no {GOOGLE_CONFIG_NAME}")
    try:
        file_config = AlbertConfig.from_google_json_file(config_path)
    except ValueError as e:
        raise CheckpointError(str(e)) from None
    config = _config_for(directory, file_config, config)
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
    _assign(model, state, names, prefix, optional, require_heads)
    return model


def _training_checkpoint(path: str) -> str | None:
    """The tf.train checkpoint prefix `path` names, or None when it is not a trainer checkpoint.

    A prefix, or a directory of ckpt-<step> files: the latest its `checkpoint` index names, else
    (index missing or stale) the highest step present.
    """
    import tensorflow as tf

    if os.path.isfile(path + ".index"):
        directory = os.path.dirname(path) or "."
        return None if _google_config_path(directory) else path
    if not os.path.isdir(path) or _google_config_path(path):
        return None
    if any(os.path.exists(os.path.join(path, n)) for n in (SAFETENSORS_NAME, PYTORCH_NAME)):
        return None
    steps = [int(m.group(1)) for m in (re.fullmatch(r"ckpt-(\d+)\.index", n)
                                       for n in os.listdir(path)) if m]
    if not steps and not os.path.exists(os.path.join(path, "checkpoint")):
        return None
    latest = tf.train.latest_checkpoint(path)
    if latest is None or not os.path.isfile(latest + ".index"):
        if not steps:
            raise CheckpointError(f"{path}/checkpoint lists no checkpoint that exists")
        latest = os.path.join(path, f"ckpt-{max(steps)}")
    return latest


def load_model(cls, path, **options):
    """`cls` from a trainer checkpoint (prefix or directory), a Hugging Face or a Google ALBERT
    directory, with every weight of `cls` (task head included) taken from it.

    For export and inference: a checkpoint that lacks the head (a pretraining checkpoint loaded
    as a QA model) raises CheckpointError instead of serving fresh random weights. options:
    num_labels / label_names of a sequence classifier (see the class's head_options).
    """
    import tensorflow as tf

    path = os.fspath(path).rstrip("/") or "/"
    if not os.path.exists(path) and not os.path.isfile(path + ".index"):
        raise CheckpointError(f"checkpoint not found: {path}")
    if os.path.isfile(path + ".index"):
        directory = os.path.dirname(path) or "."
        if _google_config_path(directory):
            return _load_google(cls, directory, None, True, prefix=path, options=options)
    prefix = _training_checkpoint(path)
    if prefix is None:
        return load_pretrained(cls, path, require_heads=True, **options)
    directory = os.path.dirname(prefix) or "."
    config_path = os.path.join(directory, "config.json")
    if not os.path.exists(config_path):
        raise CheckpointError(f"{directory} has no config.json beside checkpoint {prefix}")
    try:
        bias_shape = dict(tf.train.list_variables(prefix)).get(
            "model/classifier/bias/.ATTRIBUTES/VARIABLE_VALUE")
    except (tf.errors.OpError, ValueError) as e:
        raise CheckpointError(f"cannot read checkpoint {prefix}: "
                              f"{str(e).splitlines()[0][:300]}") from None
    model = cls(AlbertConfig.from_json_file(config_path),
                **cls.head_options(prefix, options,
                                   None if bias_shape is None else int(bias_shape[0]), None))
    model.build_for_config()
    try:
        status = tf.train.Checkpoint(model=model).read(prefix)
        status.expect_partial()
        status.assert_existing_objects_matched()
    except AssertionError as e:
        missing = sorted(set(re.findall(r"path=([^,]+),", str(e))))
        raise CheckpointError(
            f"checkpoint {prefix} lacks weights the {cls.__name__} model needs ("
            f"{', '.join(missing[:4]) or str(e)[:200]}): it was saved from another kind of model"
        ) from None
    except (tf.errors.OpError, ValueError) as e:
        raise CheckpointError(f"cannot read checkpoint {prefix}: "
                              f"{str(e).splitlines()[0][:300]}") from None
    return model


def new_directory(parent: str, prefix: str) -> str:
    """A new, uniquely named directory in `parent`, with the mode the umask gives.

    For a save that is renamed into place: tempfile.mkdtemp makes its directory 0700, and the
    rename carries that into final/ or a SavedModel that a model server or a teammate on shared
    storage then cannot read.
    """
    import uuid

    while True:
        path = os.path.join(parent, f"{prefix}{uuid.uuid4().hex[:12]}")
        try:
            os.mkdir(path)
            return path
        except FileExistsError:
            continue


def save_pretrained(model, path, spm_model: str | None = None,
                    extra_json: dict | None = None) -> None:
    """Write config.json + model.safetensors (+ spiece.model) so transformers can load the dir;
    extra_json: {file name: object} written beside them (a fine-tune's task card).

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
    tmp = new_directory(parent, ".tmp-")
    try:
        config = model.config.to_dict()
        config["architectures"] = [_hf_architecture(model)]
        config.update(_classifier_config(model))
        with open(os.path.join(tmp, "config.json"), "w", encoding="utf-8") as f:
            json.dump(config, f, indent=2, sort_keys=True)
            f.write("\n")
        save_file(tensors, os.path.join(tmp, SAFETENSORS_NAME), metadata={"format": "pt"})
        if spm_model:
            from albert.data.tokenization import write_tokenizer_files

            write_tokenizer_files(spm_model, tmp)
        for name, obj in (extra_json or {}).items():
            with open(os.path.join(tmp, name), "w", encoding="utf-8") as f:
                json.dump(obj, f, indent=2)
        if os.path.isdir(path):
            # A name of our own: "<path>.old" may be somebody's directory.
            old = tmp + ".old"
            os.rename(path, old)
            os.rename(tmp, path)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.rename(tmp, path)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


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


def _hf_architecture(model) -> str:
    name = type(model).__name__
    return name if name.startswith("Albert") else "AlbertForPreTraining"
