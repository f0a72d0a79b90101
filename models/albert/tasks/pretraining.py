"""Pretraining: MLM + sentence-order prediction on TFRecords, validated on --val_dir, optionally
fine-tuned briefly on SQuAD every --squad_frequency updates (as aws-samples does), and measured
against always guessing the most frequent masked token and a coin for the sentence order."""

from __future__ import annotations

import collections
import logging
import math
import os
import shutil

import tensorflow as tf

from albert.data.reader import (
    check_all_record_shapes,
    check_ranks_have_records,
    check_token_ids,
    count_nonempty_files,
    data_loss_message,
    pretraining_dataset,
    pretraining_feature_spec,
    resolve_files,
    shard_files,
    without_autotuner,
)
from albert.errors import DataError
from albert.io.eval_results import read_eval_results
from albert.io.pretrained import save_pretrained
from albert.model.modeling import AlbertForPreTraining
from albert.tasks import Evaluation
from albert.tasks.inference import synthetic_inputs
from albert.tasks.losses import PRETRAINING_METRICS, pretraining_loss, pretraining_metrics
from albert.tasks.pretraining_options import (
    PretrainingDeclaration,
    squad_command,
    squad_directory,
)
from albert.tasks.runner import run_in_child
from albert.train import run_spec

logger = logging.getLogger("albert.pretraining")


class PretrainingTask(PretrainingDeclaration):
    """spec.options: PretrainingOptions; spec.data: train and val."""

    def __init__(self, spec):
        super().__init__(spec)
        self.loss_fn, self.metric_names, self.metrics_fn = pretraining_loss, \
            PRETRAINING_METRICS, pretraining_metrics
        self.train_files = self.my_files = self.val_files = []
        self._unigram_counts = None

    @property
    def _shapes(self):
        o = self.spec.options
        return o.max_seq_length, o.max_predictions_per_seq

    def setup(self, dist, tokenizer) -> dict:
        """Checked on every rank before anything is built, so a bad file is one error, not a
        crash at the first validation or a rank that hangs the others with nothing to read.
        The records settle nothing the flags left open."""
        spec, prefix = self.spec, self.spec.options.filesystem_prefix
        if not spec.batching.auto:
            spec.batching.plan(dist.size)  # batch flags that cannot work stop here
        train_dir = spec.data.train
        self.train_files = resolve_files(train_dir, prefix)
        check_all_record_shapes(self.train_files, *self._shapes)
        self.my_files = shard_files(self.train_files, dist.rank, dist.size,
                                    what=f"files matching {train_dir!r}")
        check_ranks_have_records(dist.allgather_object(count_nonempty_files(self.my_files)),
                                 self.train_files, dist.size)
        if spec.data.val:
            val_dir = spec.data.val
            self.val_files = resolve_files(val_dir, prefix)
            empty = check_all_record_shapes(self.val_files, *self._shapes)
            if len(empty) == len(self.val_files):
                raise DataError(f"--val_dir {val_dir!r}: all {len(self.val_files)} file(s) are "
                                "empty, so validation would report nothing (write a validation "
                                "set with create_pretraining_data --validation_fraction, or drop "
                                "--val_dir)")
        return {}

    def model_class(self):
        return AlbertForPreTraining

    def check_model(self, model, dist) -> None:
        # Ids past the embedding table: stop here.
        check_token_ids([*self.train_files, *self.val_files], model.config.vocab_size,
                        self.spec.vocabulary)

    def data_files(self) -> list[str]:
        return run_spec.data_files(self.train_files)

    def training_data(self, plan, skip_records: int, dist):
        spec, o = self.spec, self.spec.options
        return pretraining_dataset(
            spec.data.train, plan.micro_batch, *self._shapes,
            filesystem_prefix=o.filesystem_prefix, rank=dist.rank, size=dist.size,
            training=True, seed=spec.execution.seed,
            shuffle_buffer=o.shuffle_buffer, skip_records=skip_records,
            skip_corrupt=o.skip_corrupt_records,
        ).batch(plan.accumulation, drop_remainder=True)

    def synthetic_batch(self, micro_batch: int, seq_length: int, vocab_size: int) -> dict:
        """Full-length sequences with --max_predictions_per_seq masked positions (at most every
        one but [CLS])."""
        b = micro_batch
        batch = synthetic_inputs(b, seq_length, vocab_size)
        p = min(self.spec.options.max_predictions_per_seq, seq_length - 1)
        return {**batch, "masked_lm_positions": tf.tile(tf.range(1, p + 1)[None], [b, 1]),
                "masked_lm_ids": batch["input_ids"][:, :p], "masked_lm_weights": tf.ones([b, p]),
                "sop_labels": tf.zeros([b], tf.int32)}

    def explain_data_error(self, error):
        return DataError(data_loss_message(error, self.my_files, self.spec.data.train,
                                           self.spec.options.filesystem_prefix))

    def evaluations(self, model, trainer, dist) -> list[Evaluation]:
        spec, o = self.spec, self.spec.options
        out = []
        if self.val_files and trainer is not None:
            val_data = pretraining_dataset(
                spec.data.val, spec.batching.plan(dist.size).micro_batch, *self._shapes,
                filesystem_prefix=o.filesystem_prefix, rank=dist.rank, size=dist.size,
                training=False)
            out.append(Evaluation("val", o.validation_frequency,
                                  lambda xla, step: pretraining_metrics(
                                      trainer.evaluate(val_data))))
        if o.squad_frequency:
            out.append(Evaluation("squad", o.squad_frequency, lambda xla, step:
                                  squad_during_pretraining(model, spec, dist, step)))
        return out

    def headline(self, prefix, scores) -> str:
        if prefix == "val":
            return f"MLM accuracy {scores['mlm_acc']:.4f} SOP accuracy {scores['sop_acc']:.4f}"
        if prefix == "squad":
            return f"F1 {scores.get('f1', float('nan')):.2f}"
        return super().headline(prefix, scores)

    # LAMB at 0.04 left the demo's tiny model at the most frequent token (scripts/demo.sh sweep);
    # 0.01 held for 12,000 updates on real text grew the weights tenfold and learned less than
    # 3,000 did, where 0.003 did better (docs/demo.md).
    usual_rates = ("LAMB pretrains a tiny model at about 0.01 over a few thousand updates, 0.003 "
                   "over more, base and larger at 0.00176, ALBERT's rate at batch 4096")

    def _unigram(self) -> tuple[float, int]:
        """(the most frequent masked token's share, masked tokens) of the validation set: read
        once for both the baseline and the learned-nothing test."""
        if self._unigram_counts is None:
            self._unigram_counts = masked_token_counts(self.val_files, *self._shapes)
        counts = self._unigram_counts
        total = sum(counts.values())
        return (counts.most_common(1)[0][1] / total if total else 0.0), total

    def baseline(self, final: dict) -> str | None:
        """Always the most frequent masked token of the validation set (a unigram MLM) and a
        coin for the sentence order."""
        if "val" not in final:
            return None
        return (f"unigram MLM accuracy {self._unigram()[0]:.4f} "
                "(always the most frequent masked token), SOP 0.5 (a coin)")

    def learned_nothing(self, final: dict) -> bool:
        """Held-out MLM accuracy no better than always answering the most frequent masked token,
        within two standard errors of the validation set's masked tokens: what a pretraining
        whose rate was far too high (or low) for its model scores."""
        scores = final.get("val")
        if not scores or "mlm_acc" not in scores:
            return False
        accuracy, tokens = self._unigram()
        if not tokens:
            return False
        noise = 2 * math.sqrt(max(accuracy * (1 - accuracy), 1 / tokens) / tokens)
        return scores["mlm_acc"] <= accuracy + noise


def unigram_mlm_accuracy(files, max_seq_length: int, max_predictions: int) -> float:
    """The MLM accuracy of always answering the most frequent masked token of `files`."""
    counts = masked_token_counts(files, max_seq_length, max_predictions)
    total = sum(counts.values())
    return counts.most_common(1)[0][1] / total if total else 0.0


def masked_token_counts(files, max_seq_length: int, max_predictions: int) -> collections.Counter:
    """How often each token id is a real (weighted) masked token in `files`."""
    spec = pretraining_feature_spec(max_seq_length, max_predictions)
    counts = collections.Counter()
    data = without_autotuner(tf.data.TFRecordDataset(files).batch(1024).map(
        lambda r: tf.io.parse_example(r, spec)))
    for batch in data:
        ids, weights = batch["masked_lm_ids"].numpy(), batch["masked_lm_weights"].numpy()
        counts.update(ids[weights > 0].tolist())
    return counts


def squad_during_pretraining(model, spec, dist, step: int) -> dict:
    """Rank 0 exports the current weights and runs `python -m albert.run_squad` from them
    (squad_command) in a process of its own (albert.tasks.runner.run_in_child: one process,
    the same device), returning its dev scores; other ranks return at once and wait for rank 0
    at the next allreduce. The model and run_squad's checkpoints are removed after an
    evaluation that ended well, and kept after one that failed, so the command line logged
    reruns it as it was."""
    if not dist.is_chief:
        return {}
    where = squad_directory(spec, step)
    shutil.rmtree(where, ignore_errors=True)  # an earlier try at this step (a resumed run)
    save_pretrained(model, os.path.join(where, "model"), spm_model=spec.vocabulary)
    log = os.path.join(where, "run_squad.log")
    failure = run_in_child("albert.run_squad", squad_command(spec, step), log)
    if failure:
        logger.warning("SQuAD evaluation at step %d failed (%s); its model and checkpoints are "
                       "kept in %s for a rerun of the command line logged above", step, failure,
                       where)
        return {}
    for name in ("model", "checkpoints"):
        shutil.rmtree(os.path.join(where, name), ignore_errors=True)
    return squad_scores(where)


def squad_scores(output_dir: str) -> dict:
    """The numbers of run_squad's eval_results.json in `output_dir`."""
    scores = read_eval_results(output_dir) or {}
    return {k: float(v) for k, v in scores.items() if isinstance(v, int | float)}
