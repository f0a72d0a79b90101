"""Each task the toolkit trains and serves, by its one name: the model class (albert.model.modeling)
that serves it, the head attribute that class adds, the outputs of its SavedModel's signature and
the metrics its training and evaluation lines carry. The name is the run spec's task
(albert.tasks.Task.name), the memory plan's head (albert.train.memory_plan) and the SavedModel's
kind (albert.export --head, albert.io.savedmodel). Declarations only: no TensorFlow, no model
imported (the classes are named), so every layer above reads it.
"""

from __future__ import annotations

from typing import NamedTuple


class TaskHead(NamedTuple):
    model: str                  # the model class's name in albert.model.modeling
    head: str                   # the head attribute the export checks the model has
    outputs: tuple[str, ...]    # the SavedModel signature's outputs, in order
    trained: tuple[str, ...]    # the metrics of each training line (the task's loss's)
    reported: tuple[str, ...]   # the metrics an evaluation may report (some only for some data)


TASKS = {
    "pretraining": TaskHead("AlbertForPreTraining", "predictions", ("mlm_logits", "sop_logits"),
                            ("loss", "mlm_loss", "mlm_acc", "sop_loss", "sop_acc"),
                            ("loss", "mlm_loss", "mlm_acc", "sop_loss", "sop_acc")),
    "squad": TaskHead("AlbertForQuestionAnswering", "qa_outputs", ("start_logits", "end_logits"),
                      ("loss", "start_acc", "end_acc"),
                      ("exact", "f1", "exact_match", "HasAns_exact", "HasAns_f1", "NoAns_exact",
                       "NoAns_f1", "best_exact", "best_f1")),
    # Regression too: one output; which of the two a run is, is its options' kind.
    "classification": TaskHead("AlbertForSequenceClassification", "classifier", ("logits",),
                               ("loss", "accuracy"),
                               ("accuracy", "mcc", "f1", "loss", "pearson", "spearman")),
}

# Other spellings a file or a command line already holds, read as the name (never written):
# "qa", albert.export's --head for SQuAD before this table; "regression", the task a regression
# run's run.json, task card and eval_results.json record (its options' kind: one task).
OLD_NAMES = {"qa": "squad", "regression": "classification"}


def task_name(spelling: str | None) -> str | None:
    """The one name of a task spelled `spelling` (a name, an OLD_NAMES spelling, or None)."""
    return OLD_NAMES.get(spelling, spelling)
