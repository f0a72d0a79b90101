"""Task losses. Each returns (loss, sums): `loss` is the mean over the batch's examples (what the
gradient is taken of) and `sums` are additive totals for exact metric aggregation."""

from __future__ import annotations

import tensorflow as tf

PRETRAINING_METRICS = ("examples", "mlm_loss_sum", "mlm_correct", "mlm_count", "sop_loss_sum",
                       "sop_correct")
SQUAD_METRICS = ("examples", "loss_sum", "start_correct", "end_correct")


def pretraining_loss(model, batch, training: bool):
    """MLM (weighted by masked_lm_weights) + SOP cross-entropy.

    The MLM loss is normalised per sequence (mean over its masked tokens) and then averaged over
    sequences, so a batch's loss is exactly the mean of its halves' losses: this is what makes
    2 ranks x batch B, 1 rank x batch 2B and 2 accumulation steps x batch B the same update.
    """
    out = model(
        {
            "input_ids": batch["input_ids"],
            "attention_mask": batch["attention_mask"],
            "token_type_ids": batch["token_type_ids"],
            "masked_lm_positions": batch["masked_lm_positions"],
        },
        training=training,
    )
    labels = batch["masked_lm_ids"]
    weights = tf.cast(batch["masked_lm_weights"], tf.float32)
    ce = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=out["mlm_logits"])
    counts = tf.reduce_sum(weights, axis=-1)
    per_example = tf.reduce_sum(ce * weights, axis=-1) / tf.maximum(counts, 1.0)
    mlm_loss = tf.reduce_mean(per_example)
    sop_labels = batch["sop_labels"]
    sop_ce = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=sop_labels,
                                                            logits=out["sop_logits"])
    sop_loss = tf.reduce_mean(sop_ce)
    mlm_pred = tf.argmax(out["mlm_logits"], axis=-1, output_type=labels.dtype)
    sop_pred = tf.argmax(out["sop_logits"], axis=-1, output_type=sop_labels.dtype)
    sums = {
        "examples": tf.cast(tf.shape(labels)[0], tf.float32),
        "mlm_loss_sum": tf.reduce_sum(per_example),
        "mlm_correct": tf.reduce_sum(weights * tf.cast(mlm_pred == labels, tf.float32)),
        "mlm_count": tf.reduce_sum(counts),
        "sop_loss_sum": tf.reduce_sum(sop_ce),
        "sop_correct": tf.reduce_sum(tf.cast(sop_pred == sop_labels, tf.float32)),
    }
    return mlm_loss + sop_loss, sums


def pretraining_metrics(sums: dict) -> dict:
    n = max(sums["examples"], 1.0)
    mlm_loss, sop_loss = sums["mlm_loss_sum"] / n, sums["sop_loss_sum"] / n
    return {
        "loss": mlm_loss + sop_loss,
        "mlm_loss": mlm_loss,
        "mlm_acc": sums["mlm_correct"] / max(sums["mlm_count"], 1.0),
        "sop_loss": sop_loss,
        "sop_acc": sums["sop_correct"] / n,
    }


def squad_loss(model, batch, training: bool):
    """Mean of start and end position cross-entropy (BERT's SQuAD loss)."""
    out = model(
        {
            "input_ids": batch["input_ids"],
            "attention_mask": batch["attention_mask"],
            "token_type_ids": batch["token_type_ids"],
        },
        training=training,
    )
    # Padding can never be an answer: push its logits down before the softmax.
    pad = (1.0 - tf.cast(batch["attention_mask"], tf.float32)) * -1e4
    start_logits, end_logits = out["start_logits"] + pad, out["end_logits"] + pad
    starts, ends = batch["start_positions"], batch["end_positions"]
    start_ce = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=starts, logits=start_logits)
    end_ce = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=ends, logits=end_logits)
    per_example = (start_ce + end_ce) / 2.0
    sums = {
        "examples": tf.cast(tf.shape(starts)[0], tf.float32),
        "loss_sum": tf.reduce_sum(per_example),
        "start_correct": tf.reduce_sum(tf.cast(
            tf.argmax(start_logits, -1, output_type=starts.dtype) == starts, tf.float32)),
        "end_correct": tf.reduce_sum(tf.cast(
            tf.argmax(end_logits, -1, output_type=ends.dtype) == ends, tf.float32)),
    }
    return tf.reduce_mean(per_example), sums


def squad_metrics(sums: dict) -> dict:
    n = max(sums["examples"], 1.0)
    return {"loss": sums["loss_sum"] / n, "start_acc": sums["start_correct"] / n,
            "end_acc": sums["end_correct"] / n}


CLASSIFICATION_METRICS = ("examples", "loss_sum", "correct")
REGRESSION_METRICS = ("examples", "loss_sum")


def classification_loss(model, batch, training: bool):
    """Softmax cross-entropy of the sequence classifier's logits [B, C] against int labels [B]."""
    out = model(
        {
            "input_ids": batch["input_ids"],
            "attention_mask": batch["attention_mask"],
            "token_type_ids": batch["token_type_ids"],
        },
        training=training,
    )
    labels = batch["labels"]
    ce = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=out["logits"])
    predicted = tf.argmax(out["logits"], axis=-1, output_type=labels.dtype)
    sums = {
        "examples": tf.cast(tf.shape(labels)[0], tf.float32),
        "loss_sum": tf.reduce_sum(ce),
        "correct": tf.reduce_sum(tf.cast(predicted == labels, tf.float32)),
    }
    return tf.reduce_mean(ce), sums


def classification_metrics(sums: dict) -> dict:
    n = max(sums["examples"], 1.0)
    return {"loss": sums["loss_sum"] / n, "accuracy": sums["correct"] / n}


def regression_loss(model, batch, training: bool):
    """Mean squared error of the single regression output (logits [B, 1]) against float
    labels [B] (as transformers' AlbertForSequenceClassification with num_labels=1)."""
    out = model(
        {
            "input_ids": batch["input_ids"],
            "attention_mask": batch["attention_mask"],
            "token_type_ids": batch["token_type_ids"],
        },
        training=training,
    )
    labels = tf.cast(batch["labels"], tf.float32)
    squared = tf.square(out["logits"][:, 0] - labels)
    sums = {"examples": tf.cast(tf.shape(labels)[0], tf.float32),
            "loss_sum": tf.reduce_sum(squared)}
    return tf.reduce_mean(squared), sums


def regression_metrics(sums: dict) -> dict:
    return {"loss": sums["loss_sum"] / max(sums["examples"], 1.0)}
