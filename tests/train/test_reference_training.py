"""Whole training updates against an independent reference: transformers' PyTorch ALBERT with the
same weights and batches, the pretraining loss and LAMB/AdamW written here in torch from their
published definitions, gradient accumulation and clipping by global norm active. Each update's
loss, pre-clip gradient norm and the weights it leaves must agree.

The reference runs twice: in float64, the answer, and in float32, the noise. Adam divides each
gradient element by its own running magnitude, so an element whose gradient is a rounding error
still moves by about the learning rate: a correct float32 implementation lands ~1e-3 (relative,
per tensor) from the float64 answer, and two correct float32 implementations about as far from each
other, by amounts that depend on the CPU's instruction set and XLA's fusion order. So our float32
update is held against the float64 answer, with a bound of WEIGHT_MARGIN times the distance the
float32 reference itself lands from it on the same machine (measured on AMD EPYC with AVX2, each
mode: ours 0.35x to 1.2x of that noise). The mutations the comparison exists to catch (bias
correction dropped, clipping dropped) move the weights 0.8 to 3.2 relative: 150x or more past the
bound; an accumulation that sums instead of averaging doubles the loss and the gradient norm."""

import copy

import numpy as np
import pytest
import tensorflow as tf
import torch
import transformers

from albert import AlbertConfig, AlbertForPreTraining
from albert.io.pretrained import load_pretrained, save_pretrained
from albert.tasks.losses import PRETRAINING_METRICS, pretraining_loss, pretraining_metrics
from albert.train.distributed import Distributed
from albert.train.optimization import make_optimizer
from albert.train.trainer import Trainer
from albert.train.xla_plan import XlaPlan

VOCAB, SEQ, SLOTS, MICRO, ACCUM = 97, 16, 5, 4, 2
LEARNING_RATES = [0.02, 0.015, 0.01, 0.005]
CLIP = 0.5
B1, B2, EPS, WD = 0.9, 0.999, 1e-6, 0.01
# Ours may land this many times as far from the float64 answer as the float32 reference does.
WEIGHT_MARGIN = 4.0
# A floor for the noise: below it, a tensor's relative error is float32's own resolution.
NOISE_FLOOR = 1e-5


def config():
    return AlbertConfig(vocab_size=VOCAB, embedding_size=16, hidden_size=32, num_hidden_layers=3,
                        num_hidden_groups=1, num_attention_heads=4, intermediate_size=37,
                        max_position_embeddings=SEQ, hidden_dropout_prob=0.0,
                        attention_probs_dropout_prob=0.0, classifier_dropout_prob=0.0)


def micro_batches(seed):
    """ACCUM micro-batches of MICRO sequences: padding, two segments, 1 to SLOTS masked tokens."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(ACCUM):
        lengths = rng.integers(8, SEQ + 1, MICRO)
        mask = (np.arange(SEQ)[None] < lengths[:, None]).astype(np.int32)
        ids = rng.integers(5, VOCAB, (MICRO, SEQ)).astype(np.int32) * mask
        types = ((np.arange(SEQ)[None] >= (lengths // 2)[:, None]) * mask).astype(np.int32)
        positions = np.zeros((MICRO, SLOTS), np.int32)
        labels = np.zeros((MICRO, SLOTS), np.int32)
        weights = np.zeros((MICRO, SLOTS), np.float32)
        for b in range(MICRO):
            count = int(rng.integers(1, SLOTS + 1))
            positions[b, :count] = np.sort(rng.choice(np.arange(1, lengths[b]), count,
                                                      replace=False))
            labels[b, :count] = rng.integers(5, VOCAB, count)
            weights[b, :count] = 1.0
        out.append({"input_ids": ids, "attention_mask": mask, "token_type_ids": types,
                    "masked_lm_positions": positions, "masked_lm_ids": labels,
                    "masked_lm_weights": weights,
                    "sop_labels": rng.integers(0, 2, MICRO).astype(np.int32)})
    return out


def torch_loss(model, batch):
    """Pretraining loss from its definition: each sequence's mean cross-entropy over its masked
    tokens, averaged over sequences, plus the mean SOP cross-entropy (in the model's dtype)."""
    dtype = next(model.parameters()).dtype
    t = {k: torch.tensor(v) for k, v in batch.items()}
    t["masked_lm_weights"] = t["masked_lm_weights"].to(dtype)
    out = model(input_ids=t["input_ids"].long(), attention_mask=t["attention_mask"].long(),
                token_type_ids=t["token_type_ids"].long())
    positions = t["masked_lm_positions"].long()
    logits = torch.gather(out.prediction_logits, 1,
                          positions[..., None].expand(-1, -1, out.prediction_logits.shape[-1]))
    token_ce = torch.nn.functional.cross_entropy(logits.transpose(1, 2),
                                                 t["masked_lm_ids"].long(), reduction="none")
    weights = t["masked_lm_weights"]
    per_sequence = (token_ce * weights).sum(-1) / weights.sum(-1).clamp(min=1.0)
    sop = torch.nn.functional.cross_entropy(out.sop_logits, t["sop_labels"].long())
    return per_sequence.mean() + sop


class ReferenceOptimizer:
    """LAMB (You et al. 2019, Algorithm 2) or AdamW (Loshchilov & Hutter), with weight decay and
    the trust ratio skipped for LayerNorm and bias parameters; corrected=False drops Adam's bias
    correction (Google's BERT/ALBERT optimizer)."""

    def __init__(self, named_parameters, lamb, corrected):
        self.params = list(named_parameters)
        self.lamb, self.corrected = lamb, corrected
        self.m = {n: torch.zeros_like(p) for n, p in self.params}
        self.v = {n: torch.zeros_like(p) for n, p in self.params}
        self.t = 0

    @staticmethod
    def excluded(name):
        return "LayerNorm" in name or "layer_norm" in name or name.endswith("bias")

    @torch.no_grad()
    def step(self, lr):
        self.t += 1
        for name, p in self.params:
            g = p.grad
            self.m[name] = B1 * self.m[name] + (1 - B1) * g
            self.v[name] = B2 * self.v[name] + (1 - B2) * g * g
            m, v = self.m[name], self.v[name]
            if self.corrected:
                m, v = m / (1 - B1 ** self.t), v / (1 - B2 ** self.t)
            update = m / (v.sqrt() + EPS)
            ratio = 1.0
            if not self.excluded(name):
                update = update + WD * p
                if self.lamb:
                    w_norm, u_norm = p.norm(), update.norm()
                    if w_norm > 0 and u_norm > 0:
                        ratio = float(w_norm / u_norm)
            p -= lr * ratio * update


def reference_update(model, optimizer, batches, lr):
    """One update: accumulate the micro-batches' mean loss, clip by global norm, step."""
    model.zero_grad()
    total = 0.0
    for batch in batches:
        loss = torch_loss(model, batch) / len(batches)
        loss.backward()
        total += float(loss.detach())
    params = [p for _, p in optimizer.params]
    norm = float(torch.sqrt(sum((p.grad.double() ** 2).sum() for p in params)))
    scale = min(1.0, CLIP / norm)
    for p in params:
        p.grad.mul_(scale)
    optimizer.step(lr)
    return total, norm


def relative_update_error(weights, answer, start):
    """The worst tensor's distance from the answer's update, relative to that update's size."""
    worst = 0.0
    for name, want in answer.items():
        want, got = want - start[name], weights[name] - start[name]
        # The attention key's bias has no gradient (softmax ignores a shift shared by every
        # key), so its "update" is rounding noise of ~1e-7 in both: measured against a floor.
        worst = max(worst, float(np.linalg.norm(got - want) / max(np.linalg.norm(want), 1e-4)))
    return worst


def float64_weights(model):
    return {n: p.detach().numpy().astype(np.float64) for n, p in model.named_parameters()}


@pytest.mark.parametrize("kind,corrected,xla", [
    ("lamb", True, False), ("lamb", False, False),
    pytest.param("adamw", True, True, marks=pytest.mark.slow),
], ids=["lamb", "lamb_google_uncorrected", "adamw_xla"])
def test_training_updates_match_pytorch_albert_with_a_reference_optimizer(tmp_path, kind,
                                                                          corrected, xla):
    torch.manual_seed(0)
    reference = transformers.AlbertForPreTraining(
        transformers.AlbertConfig(**config().to_dict())).train()
    with torch.no_grad():  # non-zero biases and LayerNorm shifts, so their updates show too
        for name, p in reference.named_parameters():
            if name.endswith("bias") or "LayerNorm" in name or "layer_norm" in name:
                p.add_(torch.randn_like(p) * 0.1)
    reference.save_pretrained(tmp_path / "start")
    model = load_pretrained(AlbertForPreTraining, tmp_path / "start")
    answer = copy.deepcopy(reference).double()
    start = float64_weights(reference)

    lrs = tf.constant(LEARNING_RATES)
    trainer = Trainer(model, pretraining_loss,
                      make_optimizer(kind, model.trainable_variables, WD,
                                     bias_correction=corrected),
                      lambda step: tf.gather(lrs, step), Distributed(),
                      metric_names=PRETRAINING_METRICS, accum_steps=ACCUM,
                      xla=XlaPlan(xla, xla, "the test's"),
                      max_grad_norm=CLIP)
    references = {
        "float32": (reference, ReferenceOptimizer(reference.named_parameters(), lamb=kind == "lamb",
                                                  corrected=corrected)),
        "float64": (answer, ReferenceOptimizer(answer.named_parameters(), lamb=kind == "lamb",
                                               corrected=corrected))}
    for update, lr in enumerate(LEARNING_RATES):
        batches = micro_batches(seed=update)
        trainer.train_step({k: tf.constant(np.stack([b[k] for b in batches]))
                            for k in batches[0]})
        ours_loss = pretraining_metrics(trainer.pop_sums())["loss"]
        results = {dtype: reference_update(net, opt, batches, lr)
                   for dtype, (net, opt) in references.items()}
        ref_loss, ref_norm = results["float64"]
        # Sums, not normalised per element: float32 rounding stays near 1e-6 here.
        assert ours_loss == pytest.approx(ref_loss, rel=1e-5), f"update {update}"
        assert float(trainer.grad_norm) == pytest.approx(ref_norm, rel=1e-4), f"update {update}"
        assert ref_norm > CLIP, "clipping must be active for this test to check it"

        save_pretrained(model, tmp_path / f"after_{update}")
        ours = float64_weights(transformers.AlbertForPreTraining.from_pretrained(
            tmp_path / f"after_{update}"))
        truth = float64_weights(answer)
        noise = max(relative_update_error(float64_weights(reference), truth, start), NOISE_FLOOR)
        error = relative_update_error(ours, truth, start)
        assert error < WEIGHT_MARGIN * noise, (
            f"update {update}: weight updates differ from the float64 reference by {error:.2e} "
            f"(relative), over {WEIGHT_MARGIN:g}x the float32 reference's own {noise:.2e}")
