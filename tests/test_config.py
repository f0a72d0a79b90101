import json

import pytest
import transformers

from albert import PRESETS, AlbertConfig, AlbertModel


def test_json_round_trip(tmp_path):
    cfg = AlbertConfig.from_preset("tiny", vocab_size=123, num_hidden_groups=2, inner_group_num=3)
    cfg.to_json_file(tmp_path)
    assert AlbertConfig.from_json_file(tmp_path / "config.json") == cfg
    data = json.loads((tmp_path / "config.json").read_text())
    assert data["model_type"] == "albert"
    assert "pre_layer_norm" not in data  # HF-identical unless set


def test_pre_layer_norm_round_trip(tmp_path):
    cfg = AlbertConfig.from_preset("tiny", pre_layer_norm=True)
    cfg.to_json_file(tmp_path)
    assert AlbertConfig.from_json_file(tmp_path).pre_layer_norm is True


def test_hf_config_round_trip(tmp_path):
    ours = AlbertConfig.from_preset("base")
    hf = transformers.AlbertConfig(**ours.to_dict())
    hf.save_pretrained(tmp_path)
    back = AlbertConfig.from_json_file(tmp_path / "config.json")
    assert back == ours


@pytest.mark.parametrize(
    "bad, message",
    [
        (dict(hidden_size=100, num_attention_heads=3), "divisible by num_attention_heads"),
        (dict(num_hidden_layers=5, num_hidden_groups=2), "divisible by num_hidden_groups"),
        (dict(hidden_act="swish"), "hidden_act"),
        (dict(vocab_size=0), "vocab_size"),
        (dict(hidden_dropout_prob=1.5), "hidden_dropout_prob"),
    ],
)
def test_invalid_config_names_the_field(bad, message):
    with pytest.raises(ValueError, match=message):
        AlbertConfig(**bad)


def test_unknown_preset():
    with pytest.raises(ValueError, match="unknown model size 'huge'"):
        AlbertConfig.from_preset("huge")


def test_wrong_model_type(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "bert", "vocab_size": 10}))
    with pytest.raises(ValueError, match="'bert' model"):
        AlbertConfig.from_json_file(tmp_path / "config.json")


def _param_count(name):
    model = AlbertModel(AlbertConfig.from_preset(name)).build_for_config()
    return sum(int(v.numpy().size) for v in model.weights)


# Published ALBERT v2 sizes: base 12M, large 18M (the paper's Table 1); HF counts incl. pooler.
@pytest.mark.parametrize("name, low, high", [("base", 11.0e6, 12.0e6), ("large", 17.0e6, 18.0e6)])
def test_preset_parameter_counts(name, low, high):
    count = _param_count(name)
    assert low <= count <= high, count


def test_presets_match_hf_parameter_counts():
    for name in ("tiny", "base"):
        ours = _param_count(name)
        hf_config = transformers.AlbertConfig(**AlbertConfig.from_preset(name).to_dict())
        hf = transformers.AlbertModel(hf_config)
        assert ours == sum(p.numel() for p in hf.parameters()), name
    assert set(PRESETS) == {"tiny", "base", "large", "xlarge", "xxlarge"}


# google-research/albert's released albert_base_v2 albert_config.json, field for field.
GOOGLE_BASE_V2 = {
    "attention_probs_dropout_prob": 0, "hidden_act": "gelu", "hidden_dropout_prob": 0,
    "embedding_size": 128, "hidden_size": 768, "initializer_range": 0.02,
    "intermediate_size": 3072, "max_position_embeddings": 512, "num_attention_heads": 12,
    "num_hidden_layers": 12, "num_hidden_groups": 1, "net_structure_type": 0, "gap_size": 0,
    "num_memory_blocks": 0, "inner_group_num": 1, "down_scale_factor": 1, "type_vocab_size": 2,
    "vocab_size": 30000,
}


def test_google_config_maps_to_ours(tmp_path):
    (tmp_path / "albert_config.json").write_text(json.dumps(GOOGLE_BASE_V2))
    cfg = AlbertConfig.from_google_json_file(tmp_path)
    # Google's "gelu" is the tanh approximation: HF's (and our) gelu_new, not our exact "gelu".
    assert cfg.hidden_act == "gelu_new"
    assert cfg == AlbertConfig.from_preset("base", vocab_size=30000)
    # transformers reads the same numbers from the HF form of it.
    hf = transformers.AlbertConfig(**cfg.to_dict())
    assert (hf.hidden_act, hf.embedding_size, hf.layer_norm_eps) == ("gelu_new", 128, 1e-12)


@pytest.mark.parametrize("field, value", [
    ("net_structure_type", 1), ("layers_to_keep", [3]), ("down_scale_factor", 2),
    ("hidden_act", "swish"),
])
def test_google_config_unsupported_field_is_named(field, value):
    with pytest.raises(ValueError, match=f"albert_config.json: {field}"):
        AlbertConfig.from_google_dict({**GOOGLE_BASE_V2, field: value})


def test_google_config_needs_vocab_size():
    data = dict(GOOGLE_BASE_V2)
    del data["vocab_size"]
    with pytest.raises(ValueError, match="no vocab_size"):
        AlbertConfig.from_google_dict(data)
