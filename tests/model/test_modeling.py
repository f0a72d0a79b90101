"""Parity with transformers' PyTorch ALBERT (the reference) and model behaviour."""

import keras
import numpy as np
import pytest
import tensorflow as tf
import torch
import transformers

from albert import AlbertConfig, AlbertForPreTraining, AlbertForQuestionAnswering, AlbertModel
from albert.io.pretrained import load_pretrained, save_pretrained

TOL = 1e-4

CONFIGS = {
    "shared_single_group": dict(num_hidden_layers=3),
    "groups_and_inner_layers": dict(num_hidden_layers=4, num_hidden_groups=2, inner_group_num=2),
    "four_groups_exact_gelu": dict(num_hidden_layers=4, num_hidden_groups=4, hidden_act="gelu"),
    "inner3_relu": dict(num_hidden_layers=2, inner_group_num=3, hidden_act="relu"),
}


def small_config(**overrides):
    base = dict(
        vocab_size=101, embedding_size=16, hidden_size=32, num_attention_heads=4,
        intermediate_size=37, max_position_embeddings=40, type_vocab_size=2,
    )
    return AlbertConfig(**{**base, **overrides})


def make_batch(vocab_size, seed=0, batch=3, seq=12):
    rng = np.random.default_rng(seed)
    ids = rng.integers(5, vocab_size, (batch, seq)).astype(np.int32)
    mask = np.ones((batch, seq), np.int32)
    mask[1, 8:] = 0
    mask[2, 3:] = 0
    types = np.zeros((batch, seq), np.int32)
    types[:, 6:] = 1
    return {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}


def torch_inputs(batch):
    return {k: torch.tensor(v, dtype=torch.long) for k, v in batch.items()}


def hf_model(cls, cfg, seed):
    torch.manual_seed(seed)
    model = cls(transformers.AlbertConfig(**cfg.to_dict())).eval()
    # HF zero-initialises biases and LayerNorm shifts; randomise them so the test covers them too.
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("bias") or "LayerNorm" in name:
                p.add_(torch.randn_like(p) * 0.1)
    return model


def max_diff(a, b):
    return float(np.max(np.abs(np.asarray(a) - np.asarray(b))))


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_import_from_hf_matches(name, tmp_path):
    cfg = small_config(**CONFIGS[name])
    batch = make_batch(cfg.vocab_size)
    hf = hf_model(transformers.AlbertForPreTraining, cfg, seed=1)
    hf.save_pretrained(tmp_path)
    ours = load_pretrained(AlbertForPreTraining, tmp_path)
    with torch.no_grad():
        ref = hf(**torch_inputs(batch), output_hidden_states=True)
    out = ours(batch)
    assert max_diff(ref.hidden_states[-1], out["sequence_output"]) < TOL
    assert max_diff(ref.prediction_logits, out["mlm_logits"]) < TOL
    assert max_diff(ref.sop_logits, out["sop_logits"]) < TOL


@pytest.mark.parametrize("name", ["shared_single_group", "groups_and_inner_layers"])
def test_export_to_hf_matches(name, tmp_path):
    cfg = small_config(**CONFIGS[name])
    batch = make_batch(cfg.vocab_size, seed=3)
    ours = AlbertForPreTraining(cfg).build_for_config()
    for var in ours.weights:  # make biases / LN params non-trivial too
        var.assign(var.numpy() + np.random.default_rng(0).normal(0, 0.05, var.shape))
    out = ours(batch)
    save_pretrained(ours, tmp_path / "export")
    hf = transformers.AlbertForPreTraining.from_pretrained(tmp_path / "export").eval()
    with torch.no_grad():
        ref = hf(**torch_inputs(batch), output_hidden_states=True)
    assert max_diff(ref.hidden_states[-1], out["sequence_output"]) < TOL
    assert max_diff(ref.prediction_logits, out["mlm_logits"]) < TOL
    assert max_diff(ref.sop_logits, out["sop_logits"]) < TOL
    # Decoder stays tied to the word embeddings after the round trip.
    np.testing.assert_array_equal(
        hf.predictions.decoder.weight.detach().numpy(),
        hf.albert.embeddings.word_embeddings.weight.detach().numpy(),
    )


def test_bare_model_matches_hf_albert_model(tmp_path):
    cfg = small_config(num_hidden_layers=2, num_hidden_groups=2)
    batch = make_batch(cfg.vocab_size, seed=5)
    hf = hf_model(transformers.AlbertModel, cfg, seed=2)
    hf.save_pretrained(tmp_path)  # bare AlbertModel: tensor names have no 'albert.' prefix
    ours = load_pretrained(AlbertModel, tmp_path)
    with torch.no_grad():
        ref = hf(**torch_inputs(batch))
    out = ours(batch)
    assert max_diff(ref.last_hidden_state, out["sequence_output"]) < TOL
    assert max_diff(ref.pooler_output, out["pooled_output"]) < TOL


def test_question_answering_both_directions(tmp_path):
    cfg = small_config(num_hidden_layers=2, inner_group_num=2)
    batch = make_batch(cfg.vocab_size, seed=7)
    hf = hf_model(transformers.AlbertForQuestionAnswering, cfg, seed=4)
    hf.save_pretrained(tmp_path / "hf")
    ours = load_pretrained(AlbertForQuestionAnswering, tmp_path / "hf")
    with torch.no_grad():
        ref = hf(**torch_inputs(batch))
    out = ours(batch)
    assert out["start_logits"].shape == (3, 12)
    assert max_diff(ref.start_logits, out["start_logits"]) < TOL
    assert max_diff(ref.end_logits, out["end_logits"]) < TOL
    save_pretrained(ours, tmp_path / "ours")
    back = transformers.AlbertForQuestionAnswering.from_pretrained(tmp_path / "ours").eval()
    with torch.no_grad():
        ref2 = back(**torch_inputs(batch))
    assert max_diff(ref2.start_logits, out["start_logits"]) < TOL
    assert max_diff(ref2.end_logits, out["end_logits"]) < TOL


def test_qa_from_pretraining_checkpoint_keeps_backbone(tmp_path):
    cfg = small_config(num_hidden_layers=4, num_hidden_groups=2, inner_group_num=2)
    pre = AlbertForPreTraining(cfg).build_for_config()
    # Every weight made distinct from any fresh initialisation (LayerNorm's ones, zero biases),
    # so a weight that is not carried over cannot match by chance.
    rng = np.random.default_rng(0)
    for w in pre.weights:
        w.assign(rng.normal(size=w.shape).astype(w.dtype))
    save_pretrained(pre, tmp_path)
    qa = load_pretrained(AlbertForQuestionAnswering, tmp_path)

    def backbone(model):
        prefix = f"{model.name}/albert/"
        return {w.path.removeprefix(prefix): w.numpy() for w in model.albert.weights}

    ours, theirs = backbone(qa), backbone(pre)
    # The QA backbone is the pretraining backbone without the pooler (QA never reads it).
    assert set(ours) == set(theirs) - {"pooler/kernel", "pooler/bias"}
    assert len(ours) == 5 + 2 + 2 * 2 * 16  # embeddings, projection, 2 groups x 2 inner layers
    for path, value in ours.items():
        np.testing.assert_array_equal(value, theirs[path], err_msg=path)
    batch = make_batch(cfg.vocab_size)
    inputs = [tf.constant(batch[k]) for k in ("input_ids", "token_type_ids", "attention_mask")]
    np.testing.assert_array_equal(qa.albert(*inputs)[0], pre.albert(*inputs)[0])
    assert qa(batch)["start_logits"].shape == (3, 12)


def test_masked_positions_gather_equals_full_logits():
    cfg = small_config(num_hidden_layers=2)
    model = AlbertForPreTraining(cfg).build_for_config()
    batch = make_batch(cfg.vocab_size)
    full = model(batch)["mlm_logits"].numpy()  # [B, S, V]
    positions = np.array([[0, 5, 11], [2, 2, 7], [1, 0, 0]], np.int32)
    picked = model({**batch, "masked_lm_positions": positions})["mlm_logits"].numpy()
    assert picked.shape == (3, 3, cfg.vocab_size)
    for b in range(3):
        for p in range(3):
            np.testing.assert_allclose(picked[b, p], full[b, positions[b, p]], atol=1e-5)


def test_padding_does_not_change_real_tokens():
    cfg = small_config(num_hidden_layers=2)
    model = AlbertModel(cfg).build_for_config()
    batch = make_batch(cfg.vocab_size)
    short = {k: v[2:3, :3] for k, v in batch.items()}
    padded = {k: v[2:3] for k, v in batch.items()}
    padded["input_ids"] = padded["input_ids"].copy()
    padded["input_ids"][0, 3:] = 7  # garbage behind the mask must not leak in
    a = model(short)["sequence_output"].numpy()
    b = model(padded)["sequence_output"].numpy()[:, :3]
    np.testing.assert_allclose(a, b, atol=1e-5)


def test_pre_layer_norm_runs_and_round_trips(tmp_path):
    cfg = small_config(num_hidden_layers=2, pre_layer_norm=True)
    model = AlbertForPreTraining(cfg).build_for_config()
    batch = make_batch(cfg.vocab_size)
    out = model(batch)
    assert np.isfinite(out["mlm_logits"].numpy()).all()
    post = AlbertForPreTraining(small_config(num_hidden_layers=2))
    post.build_for_config()
    # Pre-LN has one more LayerNorm (the encoder's final norm).
    assert len(model.weights) == len(post.weights) + 2
    save_pretrained(model, tmp_path)
    back = load_pretrained(AlbertForPreTraining, tmp_path)
    np.testing.assert_allclose(back(batch)["mlm_logits"], out["mlm_logits"], atol=1e-6)


@pytest.mark.parametrize("policy", ["mixed_float16", "mixed_bfloat16"])
def test_mixed_precision_close_to_float32(policy, tmp_path):
    cfg = small_config(num_hidden_layers=2, num_hidden_groups=2)
    batch = make_batch(cfg.vocab_size)
    fp32 = AlbertForPreTraining(cfg).build_for_config()
    save_pretrained(fp32, tmp_path)
    ref = fp32({**batch, "masked_lm_positions": np.array([[1, 2]] * 3)})
    keras.mixed_precision.set_global_policy(policy)
    mixed = load_pretrained(AlbertForPreTraining, tmp_path)
    assert mixed.albert.encoder.groups[0][0].query.compute_dtype == policy.split("_")[1]
    assert mixed.albert.encoder.groups[0][0].query.kernel.dtype == "float32"
    out = mixed({**batch, "masked_lm_positions": np.array([[1, 2]] * 3)})
    tol = 0.05 if policy == "mixed_float16" else 0.2
    for key in ("mlm_logits", "sop_logits", "sequence_output"):
        assert out[key].dtype == tf.float32, key
        assert np.isfinite(out[key].numpy()).all(), key
        assert max_diff(out[key], ref[key]) < tol, (key, max_diff(out[key], ref[key]))
    qa = AlbertForQuestionAnswering(cfg).build_for_config()
    assert qa(batch)["start_logits"].dtype == tf.float32


def test_bad_inputs_are_named():
    model = AlbertModel(small_config(num_hidden_layers=1)).build_for_config()
    with pytest.raises(ValueError, match="input_ids"):
        model(np.zeros((1, 3), np.int32))
    with pytest.raises(ValueError, match="integer token ids"):
        model({"input_ids": np.zeros((1, 3), np.float32)})


def test_dropout_only_in_training():
    cfg = small_config(num_hidden_layers=1, hidden_dropout_prob=0.5)
    model = AlbertModel(cfg).build_for_config()
    batch = make_batch(cfg.vocab_size)
    a = model(batch, training=False)["sequence_output"].numpy()
    b = model(batch, training=False)["sequence_output"].numpy()
    c = model(batch, training=True)["sequence_output"].numpy()
    np.testing.assert_array_equal(a, b)
    assert max_diff(a, c) > 1e-3


def test_tf_checkpoint_holds_every_weight(tmp_path):
    cfg = small_config(num_hidden_layers=4, num_hidden_groups=2, inner_group_num=2)
    model = AlbertForPreTraining(cfg).build_for_config()
    path = tf.train.Checkpoint(model=model).write(str(tmp_path / "ckpt"))
    saved = [k for k in tf.train.list_variables(path) if k[0].startswith("model/")]
    assert len(saved) == len(model.weights)
    other = AlbertForPreTraining(cfg).build_for_config()
    tf.train.Checkpoint(model=other).read(path).assert_existing_objects_matched()
    for a, b in zip(model.weights, other.weights, strict=True):
        np.testing.assert_array_equal(a.numpy(), b.numpy())


@pytest.mark.parametrize("num_labels", [3, 1], ids=["classification", "regression"])
def test_sequence_classification_matches_hf_both_directions(num_labels, tmp_path):
    from albert import AlbertForSequenceClassification

    cfg = small_config(num_hidden_layers=2, inner_group_num=2)
    batch = make_batch(cfg.vocab_size, seed=11)
    hf_cfg = {**cfg.to_dict(), "num_labels": num_labels}
    torch.manual_seed(6)
    hf = transformers.AlbertForSequenceClassification(transformers.AlbertConfig(**hf_cfg)).eval()
    with torch.no_grad():  # non-zero biases and LayerNorm shifts, as hf_model does
        for name, p in hf.named_parameters():
            if name.endswith("bias") or "LayerNorm" in name:
                p.add_(torch.randn_like(p) * 0.1)
    hf.save_pretrained(tmp_path / "hf")
    ours = load_pretrained(AlbertForSequenceClassification, tmp_path / "hf")
    assert ours.num_labels == num_labels  # read from the checkpoint's classifier
    with torch.no_grad():
        ref = hf(**torch_inputs(batch)).logits
    out = ours(batch)["logits"]
    assert out.shape == (3, num_labels) and out.dtype == tf.float32
    assert max_diff(ref, out) < TOL
    save_pretrained(ours, tmp_path / "ours")
    back = transformers.AlbertForSequenceClassification.from_pretrained(tmp_path / "ours").eval()
    assert back.config.num_labels == num_labels
    assert back.config.problem_type == ("regression" if num_labels == 1
                                        else "single_label_classification")
    with torch.no_grad():
        ref2 = back(**torch_inputs(batch)).logits
    assert max_diff(ref2, out) < TOL


def test_sequence_classification_dropout_is_keyed_and_training_only():
    from albert import AlbertForSequenceClassification
    from albert.model.dropout import dropout_key

    cfg = small_config(num_hidden_layers=1, classifier_dropout_prob=0.5)
    model = AlbertForSequenceClassification(cfg, num_labels=4).build_for_config()
    batch = make_batch(cfg.vocab_size)
    a = model(batch)["logits"].numpy()
    np.testing.assert_array_equal(a, model(batch, training=False)["logits"].numpy())
    key = tf.constant([7, 1], tf.int64)
    with dropout_key(key):
        b = model(batch, training=True)["logits"].numpy()
    with dropout_key(key):
        c = model(batch, training=True)["logits"].numpy()
    np.testing.assert_array_equal(b, c)  # the same key draws the same masks
    assert max_diff(a, b) > 1e-4
    with pytest.raises(ValueError, match="num_labels must be a positive integer"):
        AlbertForSequenceClassification(cfg, num_labels=0)


# -- recomputation (--recompute layers) ---------------------------------------------------------

RECOMPUTE_CONFIGS = {
    # One shared layer applied 3 times; 2 groups of 2 distinct layers.
    "tiny": dict(num_hidden_layers=3),
    "two_groups_two_inner": dict(num_hidden_layers=2, num_hidden_groups=2, inner_group_num=2),
}


def _recompute_gradients(overrides, mode, jit):
    """Loss and gradients of every trainable variable for one keyed, dropout-on training pass."""
    from albert.model.dropout import dropout_key
    from albert.model.recompute import set_recompute

    keras.utils.set_random_seed(0)
    cfg = AlbertConfig.from_preset("tiny", vocab_size=300, hidden_dropout_prob=0.1,
                                   attention_probs_dropout_prob=0.1, **overrides)
    model = AlbertForPreTraining(cfg).build_for_config()
    set_recompute(model, mode)
    batch = make_batch(cfg.vocab_size, seed=2, batch=4, seq=24)
    batch["masked_lm_positions"] = np.tile(np.array([[1, 5, 9, 20]], np.int32), (4, 1))

    def grads(batch, key):
        with tf.GradientTape() as tape, dropout_key(key):
            out = model(batch, training=True)
            loss = (tf.reduce_mean(tf.nn.log_softmax(out["mlm_logits"])[..., 7])
                    + tf.reduce_mean(out["sop_logits"][:, 0]))
        gradients = tape.gradient(loss, model.trainable_variables)
        return loss, [tf.convert_to_tensor(g) for g in gradients]

    fn = tf.function(grads, jit_compile=jit)
    loss, gradients = fn(batch, tf.constant([3, 4], tf.int64))
    names = [v.path for v in model.trainable_variables]
    return float(loss), [g.numpy() for g in gradients], names


@pytest.mark.parametrize("name, jit", [
    ("tiny", False), pytest.param("tiny", True, marks=pytest.mark.slow),
    pytest.param("two_groups_two_inner", True, marks=pytest.mark.slow)],
                         ids=["tiny-graph", "tiny-xla", "two_groups_two_inner-xla"])
def test_recompute_layers_gives_the_same_gradients_with_dropout_on(name, jit):
    loss, plain, names = _recompute_gradients(RECOMPUTE_CONFIGS[name], "none", jit)
    loss_r, recomputed, _ = _recompute_gradients(RECOMPUTE_CONFIGS[name], "layers", jit)
    assert loss_r == loss  # the forward pass is the same computation
    for var, a, b in zip(names, plain, recomputed, strict=True):
        # float32 rounding: the recomputed forward pass draws the same dropout masks.
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-6, err_msg=var)
        if "/encoder/group_" in var and not var.endswith(("key/bias",)):
            # Every application's gradient reaches the shared weights (the key bias alone
            # has an exactly-zero gradient: softmax ignores a constant shift).
            assert np.abs(b).max() > 1e-7, var


@pytest.mark.slow
def test_recompute_really_frees_memory_under_xla(tmp_path):
    """XLA's CPU buffer assignment (bytes of all buffers of the compiled training gradient), in a
    fresh process (XLA_FLAGS), with --recompute none and layers:

    - activation-heavy (4 applications at sequence 128, dropout on): XLA sees the recomputation
      as the same ops on the same operands as the forward pass; left alone it merges them (CSE)
      or schedules the recomputation early, and nothing is freed;
    - weight-heavy (4 applications of one layer on 8 tokens): beyond the weights and their
      gradients, the tape keeps each application's gradient of the shared weights (a full copy,
      3 MB here) to sum them at the end; with recomputation they go into a running sum one
      application at a time."""
    import json
    import subprocess
    import sys

    code = r'''
import glob, json, os, re, sys
dump = sys.argv[1]
os.environ["XLA_FLAGS"] = (f"--xla_dump_to={dump} --xla_dump_hlo_as_text "
                           "--xla_dump_hlo_module_re=.*grads_.*")
import numpy as np
import tensorflow as tf
from albert import AlbertConfig, AlbertForPreTraining
from albert.model.dropout import dropout_key
from albert.model.recompute import set_recompute
cases = {
    "activations": (dict(vocab_size=300, embedding_size=32, hidden_size=64, num_hidden_layers=4,
                         num_attention_heads=2, intermediate_size=256, hidden_dropout_prob=0.1,
                         attention_probs_dropout_prob=0.1), 4, 128),
    "weights": (dict(vocab_size=300, embedding_size=32, hidden_size=256, num_hidden_layers=4,
                     num_attention_heads=4, intermediate_size=1024), 1, 8),
}
totals = {}
for case, (cfg, batch, seq) in cases.items():
    config = AlbertConfig(**cfg)
    rng = np.random.default_rng(0)
    inputs = {"input_ids": tf.constant(rng.integers(5, 300, (batch, seq)), tf.int32),
              "attention_mask": tf.ones((batch, seq), tf.int32),
              "token_type_ids": tf.zeros((batch, seq), tf.int32)}
    for mode in ("none", "layers"):
        model = AlbertForPreTraining(config).build_for_config()
        set_recompute(model, mode)
        def grads(inputs, key):
            with tf.GradientTape() as tape, dropout_key(key):
                out = model(inputs, training=True)
                loss = tf.reduce_mean(out["mlm_logits"] ** 2) + tf.reduce_mean(out["sop_logits"])
            return tape.gradient(loss, model.trainable_variables)
        name = f"grads_{case}_{mode}"
        grads.__name__ = name
        compiled = tf.function(grads, jit_compile=True)
        compiled.experimental_get_compiler_ir(inputs, tf.constant([1, 2], tf.int64))(
            stage="optimized_hlo")
        report = glob.glob(os.path.join(dump, f"*{name}_*memory-usage-report.txt"))[0]
        found = re.search(r"Total bytes used: (\d+)", open(report).read())
        totals[f"{case}_{mode}"] = int(found.group(1))
        totals[f"{case}_parameters"] = 4 * model.count_params()
print(json.dumps(totals))
'''
    proc = subprocess.run([sys.executable, "-c", code, str(tmp_path / "dump")],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    totals = json.loads(proc.stdout.strip().splitlines()[-1])
    assert totals["activations_layers"] < 0.45 * totals["activations_none"], totals
    # Beyond the weights and their gradients (2 x parameters): about one copy of the layer's
    # weights with recomputation, one per application without.
    weights = 2 * totals["weights_parameters"]
    assert totals["weights_layers"] - weights < 0.5 * (totals["weights_none"] - weights), totals
