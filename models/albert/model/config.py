"""AlbertConfig: the one object that describes an ALBERT network, plus size presets.

Field names and defaults follow the Hugging Face `config.json` for ALBERT, so a config read from a
published checkpoint round-trips unchanged. `pre_layer_norm` is ours (HF has no pre-LN ALBERT).
Google's `albert_config.json` (the TF1 releases) is read with `from_google_json_file`.
"""

from __future__ import annotations

import dataclasses
import difflib
import json
import math
import os
from typing import Any

from albert.errors import ConfigError

ACTIVATIONS = ("gelu_new", "gelu", "relu", "gelu_pytorch_tanh")

GOOGLE_CONFIG_NAME = "albert_config.json"

# Google's modeling.py calls its tanh approximation "gelu"; under HF's names (ours) that is
# "gelu_new", while our "gelu" is the exact erf form.
GOOGLE_ACTIVATIONS = {"gelu": "gelu_new", "relu": "relu"}

# google-research/albert AlbertConfig defaults, used for keys a Google config leaves out (as
# Google's own code does). Its layer_norm has epsilon 1e-12, our default.
GOOGLE_DEFAULTS: dict[str, Any] = dict(
    embedding_size=128, hidden_size=4096, num_hidden_layers=12, num_hidden_groups=1,
    num_attention_heads=64, intermediate_size=16384, inner_group_num=1, hidden_act="gelu",
    hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0, max_position_embeddings=512,
    type_vocab_size=2, initializer_range=0.02,
)

# Fields of Google's config that change the network in ways ours does not implement, with the
# value that means "off".
GOOGLE_UNSUPPORTED = {"net_structure_type": 0, "down_scale_factor": 1, "layers_to_keep": []}

# Published ALBERT v2 sizes (google-research/albert, albert_*_v2 configs). All v2 configs use zero
# dropout; the tiny preset is ours, small enough for CPU tests and the demo.
PRESETS: dict[str, dict[str, Any]] = {
    "tiny": dict(
        embedding_size=64,
        hidden_size=128,
        num_hidden_layers=4,
        num_attention_heads=2,
        intermediate_size=512,
    ),
    "base": dict(
        embedding_size=128,
        hidden_size=768,
        num_hidden_layers=12,
        num_attention_heads=12,
        intermediate_size=3072,
    ),
    "large": dict(
        embedding_size=128,
        hidden_size=1024,
        num_hidden_layers=24,
        num_attention_heads=16,
        intermediate_size=4096,
    ),
    "xlarge": dict(
        embedding_size=128,
        hidden_size=2048,
        num_hidden_layers=24,
        num_attention_heads=16,
        intermediate_size=8192,
    ),
    "xxlarge": dict(
        embedding_size=128,
        hidden_size=4096,
        num_hidden_layers=12,
        num_attention_heads=64,
        intermediate_size=16384,
    ),
}

# --recompute: "layers" recomputes each transformer layer's activations in the backward pass
# (albert.model.recompute.set_recompute); the memory plan counts what each mode keeps.
RECOMPUTE_MODES = ("none", "layers")


POSITIVE_INTS = (
    "vocab_size", "embedding_size", "hidden_size", "num_hidden_layers", "num_hidden_groups",
    "inner_group_num", "num_attention_heads", "intermediate_size", "max_position_embeddings",
    "type_vocab_size",
)
TOKEN_IDS = ("pad_token_id", "bos_token_id", "eos_token_id")
PROBABILITIES = ("hidden_dropout_prob", "attention_probs_dropout_prob", "classifier_dropout_prob")


def _kind(value: Any) -> str:
    if isinstance(value, str):
        return f"{value!r} (a string)"
    if isinstance(value, bool):
        return f"{str(value).lower()} (a boolean)"
    return repr(value)


def _read_json(path: str) -> Any:
    """A config file's JSON; a file that is not UTF-8 JSON is one ConfigError naming it."""
    try:
        with open(path, "rb") as f:
            # Decoded whole, so that an error's offset is the file's.
            return json.loads(f.read().decode("utf-8"))
    except FileNotFoundError:
        raise FileNotFoundError(f"model config not found: {path}") from None
    except UnicodeDecodeError as e:
        # JSON is UTF-8 (RFC 8259); a config saved in another encoding (Latin-1, UTF-16) is
        # not read as one.
        raise ConfigError(f"{path} is not UTF-8 JSON: byte {e.object[e.start]:#04x} at "
                          f"offset {e.start} ({e.reason})") from None
    except json.JSONDecodeError as e:
        raise ConfigError(f"{path} is not valid JSON: {e}") from None


def check_field(name: str, value: Any) -> Any:
    """`value` as AlbertConfig.`name` holds it, or ConfigError (a ValueError) naming the field.

    Types are checked, not coerced from text: a config.json "false" is truthy and would build
    a pre-LayerNorm model, "1e-12" fails deep inside Keras, and a JSON true passes Python's
    isinstance(x, int). The one conversion is an integer where a float belongs (Google's
    configs write dropout 0).
    """
    if name in POSITIVE_INTS:
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            raise ConfigError(f"AlbertConfig.{name} must be a positive integer, got "
                              f"{_kind(value)}")
        return value
    if name in TOKEN_IDS:
        # transformers allows a missing token id (null); the network never reads these.
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)
                                  or value < 0):
            raise ConfigError(f"AlbertConfig.{name} must be an integer of at least 0 (or null), "
                              f"got {_kind(value)}")
        return value
    if name == "pre_layer_norm":
        if not isinstance(value, bool):
            raise ConfigError(f"AlbertConfig.pre_layer_norm must be true or false, got "
                              f"{_kind(value)}")
        return value
    if name == "hidden_act":
        if value not in ACTIVATIONS:
            raise ConfigError(f"AlbertConfig.hidden_act must be one of {ACTIVATIONS}, got "
                              f"{_kind(value)}")
        return value
    if name in PROBABILITIES or name in ("initializer_range", "layer_norm_eps"):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ConfigError(f"AlbertConfig.{name} must be a number, got {_kind(value)}")
        value = float(value)
        if name in PROBABILITIES and not 0.0 <= value < 1.0:
            raise ConfigError(f"AlbertConfig.{name} must be in [0, 1), got {value!r}")
        if name == "layer_norm_eps" and not 0.0 < value < math.inf:
            # 0 divides by zero on a constant row; below 0 the square root is NaN.
            raise ConfigError(f"AlbertConfig.layer_norm_eps must be a finite number above 0, "
                              f"got {value!r}")
        if name == "initializer_range" and not 0.0 <= value < math.inf:
            raise ConfigError(f"AlbertConfig.initializer_range must be a finite number of at "
                              f"least 0, got {value!r}")
        return value
    near = difflib.get_close_matches(name, [f.name for f in dataclasses.fields(AlbertConfig)], 1)
    raise ConfigError(f"{name!r} is not an AlbertConfig field"
                      + (f" (did you mean {near[0]}?)" if near else ""))


@dataclasses.dataclass
class AlbertConfig:
    vocab_size: int = 30000
    embedding_size: int = 128
    hidden_size: int = 768
    num_hidden_layers: int = 12
    num_hidden_groups: int = 1
    inner_group_num: int = 1
    num_attention_heads: int = 12
    intermediate_size: int = 3072
    hidden_act: str = "gelu_new"
    hidden_dropout_prob: float = 0.0
    attention_probs_dropout_prob: float = 0.0
    classifier_dropout_prob: float = 0.1
    max_position_embeddings: int = 512
    type_vocab_size: int = 2
    initializer_range: float = 0.02
    layer_norm_eps: float = 1e-12
    pre_layer_norm: bool = False
    pad_token_id: int = 0
    bos_token_id: int = 2
    eos_token_id: int = 3

    def __post_init__(self):
        for f in dataclasses.fields(self):
            setattr(self, f.name, check_field(f.name, getattr(self, f.name)))
        self.validate()

    def validate(self) -> None:
        """Raise ConfigError naming the field for any value of the wrong type or range, or any
        inconsistent pair of settings."""
        for f in dataclasses.fields(self):
            check_field(f.name, getattr(self, f.name))
        if self.hidden_size % self.num_attention_heads:
            raise ConfigError(
                f"AlbertConfig.hidden_size ({self.hidden_size}) must be divisible by "
                f"num_attention_heads ({self.num_attention_heads})"
            )
        if self.num_hidden_layers % self.num_hidden_groups:
            raise ConfigError(
                f"AlbertConfig.num_hidden_layers ({self.num_hidden_layers}) must be divisible by "
                f"num_hidden_groups ({self.num_hidden_groups})"
            )

    @property
    def head_size(self) -> int:
        return self.hidden_size // self.num_attention_heads

    @classmethod
    def from_preset(cls, name: str, **overrides: Any) -> AlbertConfig:
        """A preset size ('tiny', 'base', 'large', 'xlarge', 'xxlarge') with optional overrides."""
        if name not in PRESETS:
            raise ConfigError(f"unknown model size {name!r}; expected one of {sorted(PRESETS)}")
        return cls(**{**PRESETS[name], **overrides})

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> AlbertConfig:
        """Build from a Hugging Face style dict; unknown keys (architectures, ...) are ignored."""
        fields = {f.name for f in dataclasses.fields(cls)}
        kwargs = {k: v for k, v in data.items() if k in fields}
        return cls(**kwargs)

    def to_dict(self) -> dict[str, Any]:
        """The Hugging Face `config.json` dict (model_type 'albert')."""
        data = dataclasses.asdict(self)
        if not data["pre_layer_norm"]:
            # Keep exported configs identical to HF's own; the key only matters when set.
            data.pop("pre_layer_norm")
        data["model_type"] = "albert"
        data["architectures"] = ["AlbertForPreTraining"]
        return data

    @classmethod
    def from_json_file(cls, path: str | os.PathLike) -> AlbertConfig:
        path = os.fspath(path)
        if os.path.isdir(path):
            path = os.path.join(path, "config.json")
        data = _read_json(path)
        if not isinstance(data, dict):
            raise ConfigError(f"{path} must hold a JSON object (an ALBERT config.json)")
        model_type = data.get("model_type", "albert")
        if model_type != "albert":
            raise ConfigError(
                f"{path} describes a {model_type!r} model, expected an ALBERT config "
                "(model_type 'albert')"
            )
        try:
            return cls.from_dict(data)
        except (TypeError, ValueError) as e:
            raise ConfigError(f"invalid ALBERT config {path}: {e}") from None

    @classmethod
    def from_google_dict(cls, data: dict[str, Any], source: str = GOOGLE_CONFIG_NAME
                         ) -> AlbertConfig:
        """Build from Google's `albert_config.json` dict; `source` names the file in errors.

        hidden_act "gelu" becomes "gelu_new" (see GOOGLE_ACTIVATIONS); settings we do not
        implement (GOOGLE_UNSUPPORTED) raise ConfigError naming the field.
        """
        if not isinstance(data, dict):
            raise ConfigError(f"{source} must hold a JSON object")
        for name, off in GOOGLE_UNSUPPORTED.items():
            value = data.get(name, off)
            if value != off and not (off == [] and value is None):
                raise ConfigError(f"{source}: {name} = {value!r} is not supported (only {off!r}, "
                                  "the setting of every released ALBERT model)")
        if "vocab_size" not in data:
            raise ConfigError(f"{source} has no vocab_size")
        merged = {**GOOGLE_DEFAULTS, **data}
        act = merged["hidden_act"]
        if act not in GOOGLE_ACTIVATIONS:
            raise ConfigError(f"{source}: hidden_act {act!r} is not supported; expected one of "
                              f"{sorted(GOOGLE_ACTIVATIONS)}")
        merged["hidden_act"] = GOOGLE_ACTIVATIONS[act]
        fields = {f.name for f in dataclasses.fields(cls)}
        try:
            return cls(**{k: v for k, v in merged.items() if k in fields})
        except (TypeError, ValueError) as e:
            raise ConfigError(f"invalid ALBERT config {source}: {e}") from None

    @classmethod
    def from_google_json_file(cls, path: str | os.PathLike) -> AlbertConfig:
        """Read Google's `albert_config.json` (a file, or a directory holding one)."""
        path = os.fspath(path)
        if os.path.isdir(path):
            path = os.path.join(path, GOOGLE_CONFIG_NAME)
        data = _read_json(path)
        return cls.from_google_dict(data, source=path)

    def to_json_file(self, path: str | os.PathLike) -> None:
        path = os.fspath(path)
        if os.path.isdir(path):
            path = os.path.join(path, "config.json")
        with open(path, "w", encoding="utf-8") as f:
            json.dump(self.to_dict(), f, indent=2, sort_keys=True)
            f.write("\n")
