"""Sentence and sentence-pair classification (or regression), GLUE-style: the classifier, its
loss, features cached unpadded and padded per batch, every prediction scored at once on rank 0
(accuracy, MCC, F1; Pearson / Spearman), --test_file's predictions.tsv, and the majority class
as the baseline."""

from __future__ import annotations

import collections
import dataclasses
import logging
import math
import os
import random

import numpy as np
import tensorflow as tf

from albert.data import classification as data
from albert.data.classification_records import feature_dataset, write_feature_cache
from albert.data.reader import resumable_skip, without_autotuner
from albert.errors import FlagError
from albert.eval.classification_scoring import classification_scores, regression_scores
from albert.io.eval_results import write_eval_results
from albert.io.pretrained import load_model
from albert.io.run_record import Record, RunRecord
from albert.model import MODEL_INPUTS
from albert.model.modeling import AlbertForSequenceClassification
from albert.tasks import Evaluation, cached_features, losses
from albert.tasks.classifier_options import ClassifierDeclaration
from albert.tasks.inference import inference_fn, synthetic_inputs

logger = logging.getLogger("albert.classifier")


class ClassifierTask(ClassifierDeclaration):
    """spec.options: ClassifierOptions."""

    def __init__(self, spec):
        super().__init__(spec)
        # What the files held (read by setup) and where their features are cached: never a
        # setting. The task, the labels and their number are the spec's options, settled by
        # setup (a training run's data) or fine_tuned_model (an evaluation-only run's model)
        # and folded into the spec by the runner.
        self.tokenizer = None
        self.examples = {}
        self.train_prefix = self.eval_prefix = None

    # The settled values, read from the spec (its options) and nowhere else.
    @property
    def kind(self) -> str | None:
        return self.spec.options.kind

    @property
    def label_names(self) -> tuple[str, ...] | None:
        return self.spec.options.labels

    @property
    def num_labels(self) -> int | None:
        return self.spec.options.num_labels

    @property
    def regression(self) -> bool:
        return self.spec.options.regression

    @property
    def metric(self) -> str | None:
        return self.spec.options.metric

    @property
    def columns(self):
        return self.spec.options.columns

    @property
    def predict_columns(self):
        return self.spec.options.predict_columns or self.spec.options.columns

    # The training loss and its metrics, of the settled task.
    @property
    def loss_fn(self):
        return self.loss[0]

    @property
    def metric_names(self):
        return self.loss[1]

    @property
    def metrics_fn(self):
        return self.loss[2]

    def _settle(self, options) -> dict:
        """What the runner folds: the options with the task and labels settled, and the run's
        task as the record spells it."""
        return {"task": self.spec_task(options), "options": options}

    # -- data -----------------------------------------------------------------------------------
    def setup(self, dist, tokenizer) -> dict:
        """Read every file; a training run settles its task and labels in id order (the flags',
        else the training file's sorted)."""
        spec = self.spec
        self.tokenizer = tokenizer
        # Every rank reads and checks the files, so a bad row stops them all alike.
        for role, columns, labelled in (("train", self.columns, True),
                                        ("eval", self.columns, True),
                                        ("predict", self.predict_columns, False)):
            if getattr(spec.data, role):
                self.examples[role] = data.read_examples(getattr(spec.data, role), columns,
                                                         labelled=labelled)
        if not spec.trains:
            return {}
        o = spec.options
        kind, labels = o.kind or "classification", o.labels
        if kind != "regression" and labels is None:
            labels = tuple(data.label_set(self.examples["train"]))
            if len(labels) < 2:
                raise FlagError(f"{spec.data.train} has a single label "
                                f"({labels[0]!r}): nothing to classify (give --labels, "
                                "or --task regression)")
        settled = dataclasses.replace(o, kind=kind, labels=tuple(labels) if labels else None)
        values = data.label_values(self.examples["train"], spec.data.train, settled.kind,
                                   settled.labels)
        self.train_prefix = self._features("train", values, self.columns, True, dist, settled)
        return self._settle(settled)

    def _features(self, role, values, columns, training, dist, options=None) -> str:
        """The cache prefix of a file's features. Training features are shuffled (seeded)
        before they are cached, so the trainer's shuffle buffer does not read them in file order
        (files are often sorted by label). `options`: the settled options (default: the
        spec's; setup's, before the runner folds them)."""
        spec = self.spec
        o = options or spec.options
        path, examples = getattr(spec.data, role), self.examples[role]
        seq = o.max_seq_length
        settings = data.FeatureSettings(seq, o.kind, o.labels, columns,
                                        labelled=values is not None)

        def write(prefix):
            features, stats = data.featurize(examples, values, self.tokenizer, seq)
            logger.info("%s: %d examples, %d cut to --max_seq_length %d; %.1f tokens on average, "
                        "%d at most", path, stats["examples"], stats["truncated"], seq,
                        stats["mean_length"], stats["max_length"])
            if training:
                random.Random(spec.execution.seed).shuffle(features)
            write_feature_cache(features, stats, prefix, o.regression)

        key = data.cache_key(path, settings, spec.vocabulary, training)
        return cached_features(path, key, spec, dist, write, training)

    # -- the model ------------------------------------------------------------------------------
    def model_class(self):
        return AlbertForSequenceClassification

    def model_options(self) -> dict:
        return {"num_labels": self.num_labels, "label_names": self.label_names}

    def fine_tuned_model(self, dist):
        """Every weight, the classifier included, from --checkpoint_path (default: the latest
        checkpoint in --checkpoint_dir), and what it settles: the task and labels from the model
        (its run record, else its id2label) when the flags did not say them; flags that say
        other labels are refused (in another order they would swap its answers)."""
        spec, o = self.spec, self.spec.options
        path = spec.model.checkpoint_path or spec.outputs.checkpoint_dir
        record = Record()
        if spec.model.load_from == "checkpoint":
            directory = path if os.path.isdir(path) else os.path.dirname(path) or "."
            record = RunRecord(directory).load() or record
        trained = tuple(record.run_labels) if record.run_labels else None
        asked = o.labels
        names = trained or asked
        num_labels = 1 if o.regression else (len(names) if names else None)
        model = load_model(AlbertForSequenceClassification, path, num_labels=num_labels,
                           label_names=list(trained) if trained else None)
        trained = trained or (tuple(model.label_names) if model.label_names else None)
        if asked is not None and trained is not None and tuple(asked) != trained:
            raise FlagError(f"{o.labels_flag}: the model in {path} was trained "
                            f"with the labels {','.join(trained)} (in id order); drop --labels "
                            "(the model's are used) or give them in that order")
        labels = trained or asked
        if labels and model.label_names is None:
            model.label_names = tuple(labels)
        logger.info("evaluating with the fine-tuned weights of %s", path)
        # A record's task is the kind (classification | regression: spec_task).
        kind = o.kind or record.run_task or ("regression" if model.num_labels == 1
                                             else "classification")
        if kind == "regression":
            if model.num_labels != 1:
                raise FlagError(f"--task regression needs a model with one output; {path} has "
                                f"{model.num_labels}")
            labels = None
        else:
            if model.num_labels == 1:
                raise FlagError(f"{path} has one output (a regression model): add --task "
                                "regression")
            labels = labels or (tuple(model.label_names) if model.label_names else None)
            if labels is None:
                raise FlagError(f"{path} does not name its {model.num_labels} labels: give them, "
                                "in id order, with --labels")
        return model, self._settle(dataclasses.replace(o, kind=kind, labels=tuple(labels)
                                                       if labels else None))

    def check_model(self, model, dist) -> None:
        """The evaluation features, once the labels are known (an evaluation-only run takes
        them from the model)."""
        if dist.is_chief:
            logger.info("%s: %s", self.spec.task, "one output" if self.regression else
                        f"{len(self.label_names)} labels ({', '.join(self.label_names[:10])}"
                        f"{', ...' if len(self.label_names) > 10 else ''})")
        if "eval" in self.examples:
            values = data.label_values(self.examples["eval"], self.spec.data.eval,
                                       self.kind, self.label_names)
            self.eval_prefix = self._features("eval", values, self.columns, False, dist)

    # -- training -------------------------------------------------------------------------------
    def training_examples(self) -> int:
        return data.read_feature_meta(self.train_prefix)["examples"]

    @property
    def loss(self):
        if self.regression:
            return losses.regression_loss, losses.REGRESSION_METRICS, losses.regression_metrics
        return (losses.classification_loss, losses.CLASSIFICATION_METRICS,
                losses.classification_metrics)

    def synthetic_batch(self, micro_batch: int, seq_length: int, vocab_size: int) -> dict:
        dtype = tf.float32 if self.regression else tf.int32
        return {**synthetic_inputs(micro_batch, seq_length, vocab_size),
                "labels": tf.zeros([micro_batch], dtype)}

    def training_data(self, plan, skip_records: int, dist):
        o = self.spec.options
        records, parse = feature_dataset(self.train_prefix, self.regression,
                                              o.max_seq_length, o.padding, o.pad_to_multiple_of)
        accum, batch_size = plan.accumulation, plan.micro_batch

        def micro_batches(records_batch):
            """[accum x batch] serialized records -> [accum, batch, S] tensors, S the longest of
            the whole update (the micro-batches of one update are stacked, so they share it)."""
            batch = parse(records_batch)
            batch.pop("index")
            return {k: tf.reshape(v, tf.concat([[accum, batch_size], tf.shape(v)[1:]], 0))
                    for k, v in batch.items()}

        shuffled = (records.shard(dist.size, dist.rank)
                    .shuffle(10_000, seed=self.spec.execution.seed,
                             reshuffle_each_iteration=True).repeat())
        return without_autotuner(resumable_skip(shuffled, skip_records)
                                 .batch(accum * batch_size, drop_remainder=True)
                                 .map(micro_batches, num_parallel_calls=tf.data.AUTOTUNE)
                                 .prefetch(tf.data.AUTOTUNE))

    # -- evaluation -----------------------------------------------------------------------------
    def evaluations(self, model, trainer, dist) -> list[Evaluation]:
        if self.eval_prefix is None:
            return []

        def evaluate(xla: bool, step: int) -> dict:
            index, logits, labels = predict(model, self.eval_prefix, self.spec, dist, xla,
                                            self.regression)
            return score(self, index, logits, labels, step) if dist.is_chief else {}

        return [Evaluation("eval", self.spec.outputs.eval_frequency, evaluate, keeps_best=True)]

    def after_evaluation(self, model, xla: bool, dist) -> None:
        """--test_file: predictions.tsv in --output_dir."""
        if "predict" not in self.examples:
            return
        prefix = self._features("predict", None, self.predict_columns, False, dist)
        index, logits, _ = predict(model, prefix, self.spec, dist, xla, self.regression)
        if dist.is_chief:
            path = write_predictions(os.path.join(self.spec.outputs.output_dir,
                                                  "predictions.tsv"), self, index, logits)
            print(f"predicted {len(index)} examples of {self.spec.data.predict}: {path}",
                  flush=True)

    def headline(self, prefix, scores) -> str:
        metric = self.metric if self.metric in scores else \
            ("pearson" if self.regression else "accuracy")
        return f"{metric} {scores[metric]:.4f}"

    def _majority(self) -> tuple[str, float]:
        """The most frequent training label (an evaluation-only run: the evaluation file's own)
        and the accuracy of answering it for every evaluation example."""
        source = self.examples.get("train") or self.examples["eval"]
        common = collections.Counter(e.label for e in source).most_common(1)[0][0]
        gold = [e.label for e in self.examples["eval"]]
        return common, sum(g == common for g in gold) / len(gold)

    def baseline(self, final: dict) -> str | None:
        """The majority class: the accuracy of answering every evaluation example with it."""
        if "eval" not in final or self.regression:
            return None
        common, accuracy = self._majority()
        return f"majority class ({common}): accuracy {accuracy:.4f}"

    def learned_nothing(self, final: dict) -> bool:
        """Accuracy within two standard errors of the majority class's (regression: a Pearson
        correlation within two standard errors of 0)."""
        scores = final.get("eval")
        if not scores:
            return False
        n = len(self.examples["eval"])
        if self.regression:
            return "pearson" in scores and abs(scores["pearson"]) <= 2 / math.sqrt(max(n, 1))
        if "accuracy" not in scores:
            return False
        _, accuracy = self._majority()
        noise = 2 * math.sqrt(max(accuracy * (1 - accuracy), 1 / n) / n)
        return abs(scores["accuracy"] - accuracy) <= noise


def predict(model, prefix, spec, dist, xla: bool, regression: bool):
    """Every example's (index [N], logits [N, C], labels [N]), in file order, on every rank:
    each rank runs its share of the features, then all shares are gathered."""
    o = spec.options
    records, parse = feature_dataset(prefix, regression, o.max_seq_length, o.padding,
                                          o.pad_to_multiple_of)
    batches = without_autotuner(records.shard(dist.size, dist.rank).batch(o.eval_batch_size)
                                .map(parse).prefetch(tf.data.AUTOTUNE))
    # One trace for every batch shape (XLA still compiles each shape it meets once), kept for
    # the next evaluation.
    logits_of = inference_fn(model, xla, ("logits",))

    index, logits, labels = [], [], []
    for batch in batches:
        logits.append(logits_of({k: batch[k] for k in MODEL_INPUTS})[0].numpy())
        index.append(batch["index"].numpy())
        labels.append(batch["labels"].numpy())
    local = (np.concatenate(index) if index else np.zeros([0], np.int32),
             np.concatenate(logits) if logits else np.zeros([0, model.num_labels], np.float32),
             np.concatenate(labels) if labels else np.zeros([0]))
    parts = dist.allgather_object(local)
    index = np.concatenate([p[0] for p in parts])
    order = np.argsort(index, kind="stable")
    return (index[order], np.concatenate([p[1] for p in parts])[order],
            np.concatenate([p[2] for p in parts])[order])


def _finite(value):
    return value if not isinstance(value, float) or math.isfinite(value) else None


def _prediction_texts(task, logits) -> list[str]:
    if task.regression:
        # Every digit (repr): rounded, close predictions tie, and Pearson and Spearman computed
        # from the file differ from the ones reported.
        return [repr(float(v)) for v in logits[:, 0]]
    return [task.label_names[i] for i in np.argmax(logits, axis=1)]


def score(task, index, logits, labels, step) -> dict:
    """Score every evaluation prediction at once, write eval_results.json and
    eval_predictions.tsv, and return the scores (rank 0)."""
    output_dir, eval_file = task.spec.outputs.output_dir, task.spec.data.eval
    if task.regression:
        scores = regression_scores(logits[:, 0], labels)
        default = "pearson"
    else:
        scores = classification_scores(logits, labels.astype("int64"), len(task.label_names))
        default = "accuracy"
    headline = task.metric if task.metric in scores else default
    os.makedirs(output_dir, exist_ok=True)
    result = {"eval_file": eval_file, "examples": len(index), "task": task.spec.task,
              "labels": list(task.label_names) if not task.regression else None,
              "metric": headline, "step": step, **{k: _finite(v) for k, v in scores.items()}}
    write_eval_results(output_dir, result)
    gold = ([repr(float(v)) for v in labels] if task.regression
            else [task.label_names[int(i)] for i in labels])
    path = os.path.join(output_dir, "eval_predictions.tsv")
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        f.write("index\tlabel\tprediction\n")
        for i, g, p in zip(index, gold, _prediction_texts(task, logits), strict=True):
            f.write(f"{i}\t{g}\t{p}\n")
    others = " ".join(f"{k} {v:.4f}" for k, v in scores.items() if k != headline)
    print(f"eval on {eval_file} ({len(index)} examples): {headline} "
          f"{scores[headline]:.4f} ({others}); predictions in {output_dir}", flush=True)
    return scores


def write_predictions(path: str, task, index, logits) -> str:
    """GLUE's submission layout: index, prediction (a label, or a number for regression)."""
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        f.write("index\tprediction\n")
        for i, p in zip(index, _prediction_texts(task, logits), strict=True):
            f.write(f"{i}\t{p}\n")
    return path
