import json
import os
import re

import pytest
import transformers
from helpers import REPO_ROOT

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


# google-research/albert's albert_{base,large,xlarge,xxlarge}_v2 albert_config.json: layers,
# hidden, heads, FFN, embedding. The rest of each is albert_base_v2's (GOOGLE_BASE_V2): one group
# of one layer, zero dropout, the tanh-approximate gelu, 512 positions, 2 token types, 30000 pieces.
PUBLISHED_V2 = {
    "base": (12, 768, 12, 3072, 128),
    "large": (24, 1024, 16, 4096, 128),
    "xlarge": (24, 2048, 16, 8192, 128),
    "xxlarge": (12, 4096, 64, 16384, 128),
}


@pytest.mark.parametrize("name", sorted(PUBLISHED_V2))
def test_preset_is_the_published_v2_config(name):
    cfg = AlbertConfig.from_preset(name)
    sizes = (cfg.num_hidden_layers, cfg.hidden_size, cfg.num_attention_heads,
             cfg.intermediate_size, cfg.embedding_size)
    assert sizes == PUBLISHED_V2[name]
    layers, hidden, heads, ffn, embedding = PUBLISHED_V2[name]
    google = {**GOOGLE_BASE_V2, "num_hidden_layers": layers, "hidden_size": hidden,
              "num_attention_heads": heads, "intermediate_size": ffn,
              "embedding_size": embedding}
    assert cfg == AlbertConfig.from_google_dict(google)


def test_preset_names_are_the_ones_promised():
    # from_preset's docstring and its error name the presets: the published four and tiny.
    promised = AlbertConfig.from_preset.__doc__.split("(", 1)[1].split(")", 1)[0]
    assert sorted(PRESETS) == sorted(name.strip(" '") for name in promised.split(","))
    assert set(PRESETS) - set(PUBLISHED_V2) == {"tiny"}
    with pytest.raises(ValueError, match=re.escape(f"expected one of {sorted(PRESETS)}")):
        AlbertConfig.from_preset("huge")


def test_presets_are_the_model_api_guide_table():
    # docs/model_api.md's "Presets" table: preset | E | H | layers | heads | FFN | parameters.
    with open(os.path.join(REPO_ROOT, "docs", "model_api.md"), encoding="utf-8") as f:
        text = f.read()
    lines = text.split("\nPresets (", 1)[1].split("\n\n")[1].splitlines()
    assert lines[0].startswith("| preset | E | H | layers | heads | FFN |"), lines[0]
    rows = [line.strip("|").split("|") for line in lines[2:]]
    table = {cells[0].strip(): tuple(int(c) for c in cells[1:6]) for cells in rows}
    assert set(table) == set(PRESETS)
    for name, (e, h, layers, heads, ffn) in table.items():
        cfg = AlbertConfig.from_preset(name)
        assert (cfg.embedding_size, cfg.hidden_size, cfg.num_hidden_layers,
                cfg.num_attention_heads, cfg.intermediate_size) == (e, h, layers, heads, ffn), name


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


# -- issue 24 item 3: every field's type and range, through the runners' flags -----------------

def _pretraining_cli(argv, timeout=300):
    import os
    import subprocess
    import sys

    return subprocess.run([sys.executable, "-m", "albert.run_pretraining", *argv],
                          capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"})


@pytest.mark.e2e
@pytest.mark.parametrize("source, value, message", [
    ("override", "layer_norm_eps=-1",
     "--config_override layer_norm_eps=-1: AlbertConfig.layer_norm_eps must be a finite number "
     "above 0, got -1.0"),
    ("override", "num_attention_heads=true",
     "--config_override num_attention_heads=true: AlbertConfig.num_attention_heads must be a "
     "positive integer, got true (a boolean)"),
    ("json", {"pre_layer_norm": "false"},
     "AlbertConfig.pre_layer_norm must be true or false, got 'false' (a string)"),
    ("json", {"layer_norm_eps": "1e-12"},
     "AlbertConfig.layer_norm_eps must be a number, got '1e-12' (a string)"),
])
def test_bad_config_values_are_one_line_cli_errors_naming_the_field(source, value, message,
                                                                    tmp_path):
    argv = ["--train_dir", "train", "--total_steps", "5", "--plan_only"]
    if source == "override":
        argv += ["--model_size", "tiny", "--config_override", value]
    else:
        data = {**AlbertConfig.from_preset("tiny").to_dict(), **value}
        (tmp_path / "config.json").write_text(json.dumps(data))
        argv += ["--model_config", str(tmp_path / "config.json")]
        message = f"invalid ALBERT config {tmp_path / 'config.json'}: {message}"
    proc = _pretraining_cli(argv)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert proc.stderr.strip().splitlines()[-1] == f"error: {message}", proc.stderr
    assert "Traceback" not in proc.stderr and proc.stderr.count("error:") == 1


@pytest.mark.e2e
def test_config_override_pre_layer_norm_false_builds_a_post_layer_norm_model(
        sample_records, sample_vocab, tmp_path):
    """`pre_layer_norm=false` was the string "false", truthy: a pre-LayerNorm model (its final
    LayerNorm exported) with "pre_layer_norm": "false" in config.json."""
    from helpers import PREDS, SEQ
    from safetensors.numpy import load_file

    ckpt = tmp_path / "ckpt"
    proc = _pretraining_cli([
        "--filesystem_prefix", str(sample_records), "--train_dir", "train", "--model_size",
        "tiny", "--config_override", "pre_layer_norm=false", "num_hidden_layers=1",
        "layer_norm_eps=1e-6", "--spm_model", sample_vocab, "--max_seq_length", str(SEQ),
        "--max_predictions_per_seq", str(PREDS), "--per_gpu_batch_size", "2", "--total_steps",
        "1", "--checkpoint_dir", str(ckpt), "--log_dir", str(tmp_path / "logs"), "--skip_xla",
        "--no_progress"])
    assert proc.returncode == 0, proc.stderr[-3000:]
    saved = json.loads((ckpt / "config.json").read_text())
    assert "pre_layer_norm" not in saved and saved["layer_norm_eps"] == 1e-6
    assert AlbertConfig.from_json_file(ckpt).pre_layer_norm is False
    names = load_file(str(ckpt / "final" / "model.safetensors"))
    assert not [n for n in names if "final_layer_norm" in n]
    assert "albert.encoder.albert_layer_groups.0.albert_layers.0.ffn.weight" in names


@pytest.mark.parametrize("bad, message", [
    (dict(pre_layer_norm="false"), "pre_layer_norm must be true or false"),
    (dict(layer_norm_eps=0.0), "layer_norm_eps must be a finite number above 0"),
    (dict(layer_norm_eps=float("nan")), "layer_norm_eps must be a finite number above 0"),
    (dict(initializer_range=-0.02), "initializer_range must be a finite number"),
    (dict(vocab_size=1000.0), "vocab_size must be a positive integer, got 1000.0"),
    (dict(type_vocab_size=False), "type_vocab_size must be a positive integer, got false"),
    (dict(hidden_dropout_prob=True), "hidden_dropout_prob must be a number, got true"),
    (dict(pad_token_id=-1), "pad_token_id must be an integer of at least 0"),
    (dict(num_attention_heads=True), "num_attention_heads must be a positive integer, got true"),
])
def test_every_config_field_is_type_and_range_checked_in_code_and_in_json(bad, message, tmp_path):
    with pytest.raises(ValueError, match=message):
        AlbertConfig.from_preset("tiny", **bad)
    # The same value in a config.json: refused with the file's name.
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**AlbertConfig.from_preset("tiny").to_dict(), **bad}))
    with pytest.raises(ValueError, match=f"invalid ALBERT config {path}: AlbertConfig.{message}"):
        AlbertConfig.from_json_file(path)



def test_config_override_words_are_read_as_json_values():
    from albert.cli.flags import _parse_override

    assert _parse_override("pre_layer_norm=false") == ("pre_layer_norm", False)
    assert _parse_override("pre_layer_norm=True") == ("pre_layer_norm", True)
    assert _parse_override("layer_norm_eps=1e-12") == ("layer_norm_eps", 1e-12)
    assert _parse_override("pad_token_id=null") == ("pad_token_id", None)
    # An integer where a float belongs is that float (Google's configs write dropout 0).
    assert _parse_override("hidden_dropout_prob=0") == ("hidden_dropout_prob", 0.0)
    assert AlbertConfig.from_preset("tiny", hidden_dropout_prob=0).hidden_dropout_prob == 0.0


def test_issue50_item9_a_config_that_is_not_utf8_is_one_config_error(tmp_path):
    """A config.json saved as Latin-1 raised a bare UnicodeDecodeError (a traceback in every
    command); Google's albert_config.json the same."""
    from albert.errors import ConfigError

    for name, read in (("config.json", AlbertConfig.from_json_file),
                       ("albert_config.json", AlbertConfig.from_google_json_file)):
        path = tmp_path / name
        path.write_bytes(b'{"vocab_size": 30, "note": "na\xefve"}')
        with pytest.raises(ConfigError) as error:
            read(path)
        assert str(error.value) == (f"{path} is not UTF-8 JSON: byte 0xef at offset 30 "
                                    "(invalid continuation byte)")
