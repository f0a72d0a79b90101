"""SQuAD v1.1 / v2.0: the QA model, its span loss, features cached per file and settings,
prediction split across ranks and gathered on rank 0, the official scoring, and the all-empty
answers as the baseline."""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import random

import tensorflow as tf

from albert.data import squad
from albert.data.squad_records import (
    feature_dataset,
    prediction_batches,
    training_batches,
    write_feature_cache,
)
from albert.eval.squad_scoring import detect_version, evaluate
from albert.io.eval_results import write_eval_results
from albert.io.pretrained import load_model
from albert.model import MODEL_INPUTS
from albert.model.modeling import AlbertForQuestionAnswering
from albert.tasks import Evaluation, cached_features
from albert.tasks.inference import inference_fn, synthetic_inputs
from albert.tasks.losses import SQUAD_METRICS, squad_loss, squad_metrics
from albert.tasks.squad_options import (
    AT_EMPTY,
    BELOW_EMPTY,
    SquadDeclaration,
    against_empty_answers,
    empty_answer_noise,
)

logger = logging.getLogger("albert.squad")


class SquadTask(SquadDeclaration):
    def __init__(self, spec):
        super().__init__(spec)
        self.loss_fn, self.metric_names, self.metrics_fn = squad_loss, SQUAD_METRICS, \
            squad_metrics
        self.train_prefix = self.scored = None

    def settings(self):
        o = self.spec.options
        return squad.FeatureSettings(o.max_seq_length, o.doc_stride, o.max_query_length)

    def version_of(self, data) -> str:
        """The rules a file is read and scored by: --squad_version, else its own version."""
        return self.spec.options.version_flag or detect_version(data)

    def _features(self, path, tokenizer, training, dist):
        """Cached features for `path`: (examples, parsed json, cache prefix). Training features
        are shuffled (seeded) before they are cached, so the trainer's shuffle buffer does not
        read them in article order (the reference shuffles its examples)."""
        spec = self.spec
        examples, data, stats = squad.read_squad(path)
        if dist.is_chief:
            logger.info("%s: %d questions (%d unanswerable), %d answers re-aligned, %d answers "
                        "not in their context", path, stats.questions, stats.impossible,
                        stats.realigned_answers, stats.mismatched_answers)

        def write(prefix):
            features = squad.featurize(examples, tokenizer, self.settings(), training)
            if training:
                rate = squad.answer_recovery_rate(examples, features)
                logger.info("%d features; %.2f%% of answers recoverable from their token span",
                            len(features), 100 * rate)
                random.Random(spec.execution.seed).shuffle(features)
            write_feature_cache(features, prefix)

        key = squad.cache_key(path, self.settings(), spec.vocabulary, training)
        return examples, data, cached_features(path, key, spec, dist, write, training)

    def setup(self, dist, tokenizer) -> dict:
        """The features of both files; a training run settles its SQuAD version (the training
        file's, unless --squad_version said it)."""
        spec = self.spec
        if spec.data.predict:
            self.scored = self._features(spec.data.predict, tokenizer, False, dist)
        if not spec.trains:
            return {}
        _, train_data, self.train_prefix = self._features(spec.data.train, tokenizer, True, dist)
        return {"options": dataclasses.replace(spec.options,
                                               squad_version=self.version_of(train_data))}

    def model_class(self):
        return AlbertForQuestionAnswering

    def fine_tuned_model(self, dist):
        """Every weight, the QA head included, from --checkpoint_path (default: the latest
        checkpoint in --checkpoint_dir). A checkpoint without a QA head is an error, never a
        randomly initialised head."""
        path = self.spec.model.checkpoint_path or self.spec.outputs.checkpoint_dir
        model = load_model(self.model_class(), path)
        logger.info("predicting with the fine-tuned weights of %s", path)
        return model, {}

    def training_examples(self) -> int:
        records, _ = feature_dataset(self.train_prefix, self.spec.options.max_seq_length)
        return sum(1 for _ in records)

    def training_data(self, plan, skip_records: int, dist):
        """Updates of windows of one length bucket, seeded and shuffled across buckets
        (--padding batch), or every window padded to --max_seq_length (--padding max)."""
        spec = self.spec
        return training_batches(self.train_prefix, plan.micro_batch, plan.accumulation,
                                      spec.options.max_seq_length, spec.execution.seed,
                                      dist.rank, dist.size, skip_records, spec.options.padding)

    def synthetic_batch(self, micro_batch: int, seq_length: int, vocab_size: int) -> dict:
        position = tf.ones([micro_batch], tf.int32)
        return {**synthetic_inputs(micro_batch, seq_length, vocab_size),
                "start_positions": position, "end_positions": position}

    def evaluations(self, model, trainer, dist) -> list[Evaluation]:
        if self.scored is None:
            return []

        def predict_and_score(xla: bool, step: int) -> dict:
            results = predict(model, self.scored[2], self.spec, dist, xla)
            if not dist.is_chief:
                return {}
            return score(self.spec, *self.scored, results, self.version_of(self.scored[1]))

        return [Evaluation("eval", self.spec.outputs.eval_frequency, predict_and_score,
                           keeps_best=True)]

    def headline(self, prefix, scores) -> str:
        exact = scores.get("exact", scores.get("exact_match"))
        return f"exact {exact:.2f} F1 {scores['f1']:.2f}"

    def _empty_scores(self) -> dict:
        """The official scores of answering every question with no answer (v2.0: the
        unanswerable share; v1.1: 0)."""
        _, data, _ = self.scored
        empty = {qa["id"]: "" for article in data["data"] for paragraph in article["paragraphs"]
                 for qa in paragraph["qas"]}
        return evaluate(data, empty, None, self.version_of(data))

    def _standing(self, final: dict) -> tuple[str | None, dict | None]:
        """(against_empty_answers of the final evaluation, the all-empty answers' scores)."""
        scores = final.get("eval")
        if not scores or "f1" not in scores:
            return None, None
        empty = self._empty_scores()
        return against_empty_answers(scores["f1"], scores.get("HasAns_f1", scores["f1"]),
                                     empty["f1"], empty["total"]), empty

    def baseline(self, final: dict) -> str | None:
        """What answering every question with no answer scores, by the official rules, and a
        warning when the final F1 is below it (no runner line says that otherwise)."""
        if "eval" not in final:
            return None
        standing, scores = self._standing(final)
        scores = scores or self._empty_scores()
        exact = scores.get("exact", scores.get("exact_match"))
        phrase = f"all-empty answers: exact {exact:.2f} F1 {scores['f1']:.2f}"
        if standing == BELOW_EMPTY:
            phrase += (f"; WARNING: the model scores below answering nothing: F1 "
                       f"{final['eval']['f1']:.2f} against {scores['f1']:.2f}, more than the "
                       f"noise of {empty_answer_noise(scores['total']):.2f} on "
                       f"{scores['total']} questions: it answers questions it should leave "
                       "empty, and wrongly. Likely causes: too few updates, or a "
                       "--learning_rate that does not suit this model's size "
                       f"({self.spec.optimization.learning_rate:g} here; {self.usual_rates})")
        return phrase

    def learned_nothing(self, final: dict) -> bool:
        """At the all-empty answers (against_empty_answers): it learned at most to abstain. A
        score below them is the baseline's warning, not this one."""
        return self._standing(final)[0] == AT_EMPTY


def predict(model, prefix, spec, dist, xla: bool) -> dict:
    """This rank's share of the features -> {feature_index: (start, end)} over each window's real
    tokens (padding is never an answer, and so trimmed they do not depend on how a batch was
    padded), gathered on rank 0."""
    o = spec.options
    batches = prediction_batches(prefix, o.eval_batch_size, o.max_seq_length, o.padding,
                                       rank=dist.rank, size=dist.size)
    logits = inference_fn(model, xla, ("start_logits", "end_logits"))
    local = {}
    for batch in batches:
        start, end = logits({k: batch[k] for k in MODEL_INPUTS})
        local.update(squad.real_logits(batch["feature_index"], batch["attention_mask"],
                                       start, end))
    results = {}
    for part in dist.allgather_object(local):
        results.update(part)
    return results


def score(spec, examples, data, prefix, results, version: str) -> dict:
    """Post-process logits into answers, write the prediction files, score them with the
    official rules of `version` ("v1.1", "v2.0") and return the scores (rank 0)."""
    o, output_dir = spec.options, spec.outputs.output_dir
    meta = squad.read_feature_meta(prefix)
    predictions, nbest, null_odds = squad.postprocess(
        examples, meta, results, n_best=o.n_best_size, max_answer_length=o.max_answer_length,
        version_2=version == "v2.0", null_score_diff_threshold=o.null_score_diff_threshold)
    os.makedirs(output_dir, exist_ok=True)
    files = {"predictions.json": predictions, "nbest_predictions.json": nbest}
    if version == "v2.0":
        files["null_odds.json"] = null_odds
    for name, obj in files.items():
        with open(os.path.join(output_dir, name), "w", encoding="utf-8") as f:
            json.dump(obj, f, indent=1 if name != "nbest_predictions.json" else None)
    scores = evaluate(data, predictions, null_odds if version == "v2.0" else None, version)
    write_eval_results(output_dir, {"version": version, **scores})
    predict_file = spec.data.predict
    print(f"SQuAD {version} on {predict_file}: exact "
          f"{scores.get('exact', scores.get('exact_match')):.2f} F1 "
          f"{scores['f1']:.2f}; predictions in {output_dir}", flush=True)
    return {k: float(v) for k, v in scores.items()}
