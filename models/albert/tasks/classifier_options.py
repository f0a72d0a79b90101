"""What classification is, said without TensorFlow: its options (ClassifierOptions), the
sequence length run_classifier's flags offer, the scores it reports and the task's declaration
(its name, its run's task as the record spells it, what it logs, its published rate).
run_classifier reads them at its start; albert.tasks.classification computes."""

from __future__ import annotations

import dataclasses

from albert.data.classification import Columns
from albert.model.heads import TASKS
from albert.tasks import LOOP_LOGGED, Task
from albert.train.run_spec import TaskOptions, identity_field

FEATURES = {"max_seq_length": 128}
REPORTED = TASKS["classification"].reported
# What losses.classification_metrics makes of the training sums (regression_metrics: loss alone).
TRAINING_METRICS = TASKS["classification"].trained


@dataclasses.dataclass(frozen=True, kw_only=True)
class ClassifierOptions(TaskOptions):
    """The sequence length, the labelled files' columns and the labels in id order decide the
    run (the labels are recorded beside the features, as the task card carries them); which
    metric is reported first, the test file's columns and how batches are padded do not."""
    max_seq_length: int = identity_field(FEATURES["max_seq_length"])
    columns: Columns = identity_field(Columns("sentence", None, "label"),
                                           record=lambda c: list(dataclasses.astuple(c)))
    labels: tuple[str, ...] | None = identity_field(None, under="labels", record=list)
    predict_columns: Columns | None = None  # None: columns
    kind: str | None = None  # --task: classification | regression (None: the model's, or labels)
    labels_flag: str | None = None  # how the labels were asked for, for messages
    metric: str | None = None  # reported first (None: accuracy, or pearson for regression)
    # batch: each batch padded to its longest sequence, rounded up to pad_to_multiple_of; max: to
    # max_seq_length. The same examples train together either way: only the pad width differs.
    # (SQuAD's padding decides which windows share an update, and belongs to its run.)
    padding: str = "batch"
    pad_to_multiple_of: int = 8
    eval_batch_size: int = 64

    @property
    def regression(self) -> bool:
        return self.kind == "regression"

    @property
    def num_labels(self) -> int | None:
        """The classifier's outputs: one for regression, else one per label (None: the labels
        are not settled yet)."""
        return 1 if self.regression else (len(self.labels) if self.labels else None)


class ClassifierDeclaration(Task):
    """What a classification run says once (albert.tasks.Task);
    albert.tasks.classification.ClassifierTask computes it."""

    name = "classification"
    exports = True
    reported = REPORTED
    logged = {"train": TRAINING_METRICS + LOOP_LOGGED, "eval": REPORTED}
    learning_rate = 2e-5  # within BERT's and ALBERT's published GLUE rates (1e-5 to 5e-5)

    @classmethod
    def spec_task(cls, options) -> str:
        # run.json's and the task card's "task" has always told regression from
        # classification, and resumes compare it: it stays the options' kind on disk.
        return options.kind or cls.name
