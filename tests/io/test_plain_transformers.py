"""Our exports in the environment `pip install transformers sentencepiece torch` gives: no
TensorFlow and no protobuf. transformers cannot convert a spiece.model there, so an export must
carry tokenizer.json; the three model classes must load with the Auto classes and compute our
logits."""

import json
import pathlib
import subprocess
import sys

import numpy as np
import pytest
import transformers

from albert import (
    AlbertConfig,
    AlbertForPreTraining,
    AlbertForQuestionAnswering,
    AlbertForSequenceClassification,
)
from albert.data.tokenization import load_spm, load_tokenizer, preprocess_text
from albert.io.pretrained import save_pretrained

TEXTS = ["Which module parses command-line options?",
         "The  ``argparse'' module parses Command-Line options; Café naïve résumé 12,345."]

# The child runs isolated (-I -S) on a view of our site-packages without TensorFlow, Keras,
# protobuf and tiktoken (transformers' last fallback), as if they had never been installed.
BLOCKED = ("tensorflow", "keras", "tiktoken", "google.protobuf")
CHILD = r"""
import importlib.util, json, sys

view, texts, exports, blocked = json.loads(sys.argv[1])
sys.path.append(view)
missing = [name for name in blocked if importlib.util.find_spec(name) is None]
assert missing == list(blocked), f"importable in the child: {set(blocked) - set(missing)}"
import torch
from transformers import (AutoModelForPreTraining, AutoModelForQuestionAnswering,
                          AutoModelForSequenceClassification, AutoTokenizer)

auto = {"pretraining": AutoModelForPreTraining, "qa": AutoModelForQuestionAnswering,
        "classifier": AutoModelForSequenceClassification}
out = {}
for kind, directory in exports.items():
    tokenizer = AutoTokenizer.from_pretrained(directory)
    ids = [tokenizer(t)["input_ids"] for t in texts]
    pair = tokenizer(texts[0], texts[1], return_token_type_ids=True)
    model = auto[kind].from_pretrained(directory).eval()
    with torch.no_grad():
        result = model(input_ids=torch.tensor([pair["input_ids"]]),
                       token_type_ids=torch.tensor([pair["token_type_ids"]]))
    logits = {"pretraining": lambda r: [r.prediction_logits, r.sop_logits],
              "qa": lambda r: [r.start_logits, r.end_logits],
              "classifier": lambda r: [r.logits]}[kind](result)
    out[kind] = {"ids": ids, "pair": pair["input_ids"], "types": pair["token_type_ids"],
                 "logits": [x.numpy().tolist() for x in logits],
                 "tokenizer": type(tokenizer).__name__}
loaded = sorted(m for m in sys.modules
                if any(m == b or m.startswith(b + ".") for b in blocked))
print(json.dumps({"loaded": loaded, "exports": out}))
"""


def site_packages_without_tensorflow_or_protobuf(view):
    """A directory of links to this environment's packages, less the blocked ones."""
    site = pathlib.Path(transformers.__file__).parents[1]
    skip = ("tensorflow", "keras", "protobuf", "tiktoken")
    view.mkdir()
    for entry in site.iterdir():
        if entry.name.endswith(".pth") or entry.name.lower().startswith(skip):
            continue
        if entry.name == "google":  # a namespace package; protobuf is one of its parts
            (view / "google").mkdir()
            for part in entry.iterdir():
                if part.name not in ("protobuf", "_upb"):
                    (view / "google" / part.name).symlink_to(part)
            continue
        (view / entry.name).symlink_to(entry)
    return view


def ours(model, kind, ids, types):
    inputs = {"input_ids": np.array([ids]), "token_type_ids": np.array([types])}
    result = model(inputs)
    names = {"pretraining": ("mlm_logits", "sop_logits"), "qa": ("start_logits", "end_logits"),
             "classifier": ("logits",)}[kind]
    return [result[name] for name in names]


@pytest.mark.e2e
def test_an_export_loads_in_transformers_without_tensorflow_or_protobuf(sample_vocab, tmp_path):
    config = AlbertConfig(vocab_size=2000, embedding_size=16, hidden_size=32, num_hidden_layers=2,
                          num_attention_heads=2, intermediate_size=48, max_position_embeddings=64)
    models = {"pretraining": AlbertForPreTraining(config),
              "qa": AlbertForQuestionAnswering(config),
              "classifier": AlbertForSequenceClassification(config, num_labels=3)}
    exports = {}
    for kind, model in models.items():
        model.build_for_config()
        exports[kind] = str(tmp_path / kind)
        save_pretrained(model, exports[kind], spm_model=sample_vocab)
        assert (tmp_path / kind / "tokenizer.json").is_file()

    view = site_packages_without_tensorflow_or_protobuf(tmp_path / "site-packages")
    request = json.dumps([str(view), TEXTS, exports, BLOCKED])
    child = subprocess.run([sys.executable, "-I", "-S", "-c", CHILD, request],
                           capture_output=True, text=True, timeout=300)
    assert child.returncode == 0, child.stderr[-3000:]
    report = json.loads(child.stdout.strip().splitlines()[-1])
    assert report["loaded"] == []

    sp = load_spm(sample_vocab)
    pretraining_ids = [[2, *sp.EncodeAsIds(preprocess_text(t)), 3] for t in TEXTS]
    fine_tune = load_tokenizer(sample_vocab)
    pair = fine_tune(TEXTS[0], TEXTS[1], return_token_type_ids=True)
    for kind, got in report["exports"].items():
        assert got["tokenizer"] == "AlbertTokenizer"
        assert got["ids"] == pretraining_ids  # what create_pretraining_data writes
        assert got["ids"] == [fine_tune(t)["input_ids"] for t in TEXTS]  # what fine-tunes feed
        assert got["pair"] == pair["input_ids"] and got["types"] == pair["token_type_ids"]
        expected = ours(models[kind], kind, got["pair"], got["types"])
        for theirs, mine in zip(got["logits"], expected, strict=True):
            np.testing.assert_allclose(np.array(theirs), np.asarray(mine), atol=2e-5, rtol=1e-4)
