"""Tasks: what differs between pretraining, SQuAD and classification, and nothing else.

A task says how to build its model, its loss and metrics, its training data, how to evaluate,
what to export and what baseline its scores are measured against. albert.tasks.runner runs every
task the same way (build -> start or resume -> train -> evaluate -> export -> summary), so the
runner modules (run_pretraining, run_squad, run_classifier) are their flags and a Task.

Which task a run is, is said once, by its Task class: `name`, a class constant, its one name in
albert.model.heads.TASKS (the run spec's task, the memory plan's head, its SavedModel's kind; a
classifier's regression is its options' kind, not another name), `synthetic_batch` (the trial
steps of --per_gpu_batch_size auto) and `logged` (the metrics its log lines carry, from which the
SageMaker launcher makes its metric definitions). The layers below are handed these, never
import them.

Each task is two modules: what its command reads at its start, without TensorFlow (its options
and its declaration, a Task subclass: albert.tasks.squad_options, albert.tasks.classifier_options,
albert.tasks.pretraining_options), and the task that computes (albert.tasks.squad, ...), which
extends the declaration and imports TensorFlow at its top. This package module imports none.
"""

from __future__ import annotations

import logging
import os

from albert.train import run_spec
from albert.train.evaluation import Evaluation

# A fine-tune's peak learning rate when --learning_rate is not given. The published rates
# (ALBERT, BERT: 1e-5 to 5e-5) are a base model's. The tiny preset (hidden size 128) learned
# nothing at them: SST-2 from a pretrained tiny model at 2e-5 stayed at the majority class where
# 5e-4 reached 0.80, and the demo's SQuAD fine-tune (docs/demo.md) learned at 1e-4 to 5e-4.
SMALL_MODEL_HIDDEN_SIZE = 256
SMALL_MODEL_LEARNING_RATE = 5e-4

# What albert.train.loop.fit adds to each "train" log line beside the task's metrics
# (seq_per_sec: not on a line whose only update since the last one compiled the step).
LOOP_LOGGED = ("learning_rate", "loss_scale", "grad_norm", "weight_norm", "skipped_updates",
               "seq_per_sec")


class Task:
    """The base every task extends. Attributes a task sets in setup(): loss_fn, metric_names,
    metrics_fn (the training loss and its metrics, losses.*), and what its examples are called
    (`unit`). Its spec is the one the runner hands it: replaced once, by the runner, with what
    setup() returns folded in (albert.tasks.runner)."""

    name = "task"          # its one name (model.heads.TASKS): pretraining | squad | classification
    unit = "examples"      # what one training example is called in the log
    exports = False        # --export_dir writes a SavedModel of kind export_task at the end
    card = True            # final/ and exports carry the task card (albert.train.run_spec)
    # The metrics each of its log lines carries, by the line's prefix ("train", and each
    # Evaluation's): some only for some data (a classifier's f1 for two labels, SQuAD v2.0's
    # HasAns_ ones, seq_per_sec not on the first line).
    logged: dict[str, tuple[str, ...]] = {}
    rescore_finished = True  # an already finished run is evaluated again (its summary)
    needs_tokenizer = True   # fine-tuners featurize text; pretraining reads token ids
    num_labels = 2
    # The published fine-tuning rate of a base or larger model, taken when --learning_rate is
    # not given (default_learning_rate); None: the task's flag always has a value.
    learning_rate: float | None = None

    # The training loss and its metrics (losses.*): set once, when the task is made.
    loss_fn = metric_names = metrics_fn = None

    def __init__(self, spec):
        self.spec = spec

    @classmethod
    def spec_task(cls, options) -> str:
        """The run spec's task (RunSpec.task: run.json's and the task card's "task") of a run of
        this task with `options`: its name."""
        return cls.name

    def default_learning_rate(self, config) -> tuple[float, str]:
        """The peak learning rate of a run not given --learning_rate, by the model's size, and
        why (for the log)."""
        if config.hidden_size <= SMALL_MODEL_HIDDEN_SIZE:
            return SMALL_MODEL_LEARNING_RATE, (
                f"a small model's: hidden size {config.hidden_size} <= "
                f"{SMALL_MODEL_HIDDEN_SIZE}; published rates are a base model's and leave it "
                "where it started")
        return self.learning_rate, f"the published {self.name} rate for base and larger models"

    @property
    def export_task(self) -> str | None:
        """albert.export's --head for a SavedModel of this task (None: the run exports none):
        its name, as a later `albert.export` of its checkpoint reads its task card's task."""
        return self.name if self.exports else None

    # -- before the model -----------------------------------------------------------------------
    def setup(self, dist, tokenizer) -> dict:
        """Read the data (every rank, so a bad row stops them all alike) and write feature
        caches (rank 0). Returns what the data settled that the flags left open, as RunSpec
        fields to replace (the SQuAD version of the training file, a classifier's labels): {}
        when nothing."""
        return {}

    # -- the model ------------------------------------------------------------------------------
    def model_class(self):
        """The model class (albert.model.modeling) a training run builds."""
        raise NotImplementedError

    def model_options(self) -> dict:
        """The model class's constructor arguments besides the config (its head_options)."""
        return {}

    def fine_tuned_model(self, dist):
        """The model an evaluation-only run scores (every weight from --checkpoint_path) and what
        it settled that the flags left open (as setup's: RunSpec fields to replace)."""
        raise NotImplementedError

    def check_model(self, model, dist) -> None:
        """Checks of the data against the model built (token ids within its vocabulary)."""

    # -- training -------------------------------------------------------------------------------
    def training_examples(self) -> int | None:
        """Training examples in all, for --num_train_epochs (None: --total_steps is required)."""
        return None

    def training_data(self, plan, skip_records: int, dist):
        """A repeated tf.data.Dataset of dicts of [accumulation, micro-batch, ...] tensors, this
        rank's share, skipping `skip_records` of its records first."""
        raise NotImplementedError

    def data_files(self) -> list[str]:
        """The training data as the run record holds it (run_spec.data_files)."""
        return run_spec.data_files([self.spec.data.train])

    def explain_data_error(self, error):
        """The error to raise for a corrupt input record (None: the original)."""
        return None

    def synthetic_batch(self, micro_batch: int, seq_length: int, vocab_size: int) -> dict:
        """`micro_batch` full-length sequences with every feature this task's loss reads, for
        the trial steps of --per_gpu_batch_size auto (albert.train.memory)."""
        raise NotImplementedError

    # -- evaluation and export ------------------------------------------------------------------
    def evaluations(self, model, trainer, dist) -> list[Evaluation]:
        return []

    def after_evaluation(self, model, xla: bool, dist) -> None:
        """What the run does after its final evaluation (a classifier's --test_file)."""

    def headline(self, prefix: str, scores: dict) -> str:
        """The scores the closing summary shows of an evaluation."""
        return " ".join(f"{k} {v:.4f}" for k, v in scores.items()
                        if isinstance(v, float | int))

    def baseline(self, final: dict) -> str | None:
        """What the final scores are measured against, as a phrase (rank 0)."""
        return None

    def learned_nothing(self, final: dict) -> bool:
        """Whether the final scores are the baseline's, within two standard errors of the
        evaluation's size: a fine-tune that ran but learned nothing (rank 0)."""
        return False

    # The learning rates that usually work, for the warning of a run that learned nothing.
    usual_rates = ("a tiny or small model fine-tunes at 1e-4 to 1e-3, base and larger at 1e-5 to "
                   "5e-5")


def default_rate_help(task_class) -> str:
    """--learning_rate's help in a fine-tuner that leaves the rate to the model's size."""
    return (f"peak learning rate (default by the model's size: {SMALL_MODEL_LEARNING_RATE:g} for "
            f"a hidden size up to {SMALL_MODEL_HIDDEN_SIZE}, as the tiny preset's; else "
            f"{task_class.learning_rate:g}, the published rate for base and larger)")


def learned_nothing_warning(spec, steps: int, usual_rates: str = Task.usual_rates) -> str:
    """What the closing summary says of a run that ended at its baseline, with the causes that
    usually make it so. It names the rate beside the usual ones and leaves the reader to compare
    them: the model's size is not known here, and the rate can be the usual one while the run
    was too short for it (the quick demo's LAMB 0.01 over 30 updates)."""
    return (f"WARNING: the model learned nothing: its scores are the baseline's. Likely causes: "
            f"too few updates ({steps}), or a --learning_rate that does not suit this model's "
            f"size ({spec.optimization.learning_rate:g} here; {usual_rates})")


def cached_features(path: str, key: str, spec, dist, write, training: bool) -> str:
    """The cache prefix of `path`'s features under --cache_dir, written by rank 0 with
    write(prefix) when not cached yet; every rank waits for it. Training features carry the seed
    in their name (they are shuffled by it before they are cached)."""
    name = f"{os.path.basename(path)}.{key}" + (f".seed{spec.execution.seed}" if training else "")
    prefix = os.path.join(spec.outputs.cache_dir, name)
    if dist.is_chief:
        os.makedirs(spec.outputs.cache_dir, exist_ok=True)
        if os.path.exists(prefix + ".tfrecord"):
            logging.getLogger("albert.tasks").info("using cached features %s.tfrecord", prefix)
        else:
            write(prefix)
    dist.barrier()
    return prefix
