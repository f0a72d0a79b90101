"""What pretraining is, said without TensorFlow: its options (PretrainingOptions), the
run_squad flag each --squad_* flag becomes and the command line of a SQuAD evaluation
(squad_command, which run_pretraining checks with run_squad's parser before any pretraining), and
the task's declaration (its name, what it logs). run_pretraining reads them at its start;
albert.tasks.pretraining computes."""

from __future__ import annotations

import os
from dataclasses import dataclass

from albert.tasks import LOOP_LOGGED, Task
from albert.tasks.squad_options import REPORTED as SQUAD_REPORTED
from albert.train.run_spec import TaskOptions, identity_field

# What losses.pretraining_metrics makes of the training (and validation) sums.
TRAINING_METRICS = ("loss", "mlm_loss", "mlm_acc", "sop_loss", "sop_acc")


@dataclass(frozen=True, kw_only=True)
class PretrainingOptions(TaskOptions):
    """The records' shapes and the input shuffle decide the run; where the files are read from,
    how damaged ones are read, and how often and how it is evaluated do not. spec.data.train and
    .val are read under filesystem_prefix."""
    max_seq_length: int = identity_field(512)
    max_predictions_per_seq: int = identity_field(20)
    shuffle_buffer: int = identity_field(10_000)
    filesystem_prefix: str = "."
    skip_corrupt_records: bool = False
    validation_frequency: int = 0
    # SQuAD during pretraining: every squad_frequency updates (0: off), `python -m
    # albert.run_squad` fine-tunes the weights of that moment with these values (SQUAD_FLAGS:
    # run_squad's flag for each; None: run_squad's default) and scores them (squad_command).
    squad_frequency: int = 0
    squad_train_file: str | None = None
    squad_predict_file: str | None = None
    squad_steps: int | None = None
    squad_max_seq_length: int | None = None
    squad_batch_size: int | None = None
    squad_learning_rate: float | None = None


# run_squad's flag for each --squad_* flag of run_pretraining (PretrainingOptions' field of the
# same name).
SQUAD_FLAGS = {"--squad_train_file": "--train_file", "--squad_predict_file": "--predict_file",
               "--squad_steps": "--total_steps", "--squad_batch_size": "--per_gpu_batch_size",
               "--squad_learning_rate": "--learning_rate",
               "--squad_max_seq_length": "--max_seq_length"}


class PretrainingDeclaration(Task):
    """What a pretraining run says once (albert.tasks.Task);
    albert.tasks.pretraining.PretrainingTask computes it."""

    name = "pretraining"
    unit = "sequences"
    card = False  # a pretrained model serves no task
    logged = {"train": TRAINING_METRICS + LOOP_LOGGED, "val": TRAINING_METRICS,
              "squad": SQUAD_REPORTED}
    rescore_finished = False  # a finished run was validated at its end
    needs_tokenizer = False  # the records hold token ids


def squad_directory(spec, step: int) -> str:
    """Where the SQuAD evaluation at `step` keeps its log and run_squad's outputs (its
    eval_results.json, predictions and logs): <checkpoint_dir>/squad/step_<step>."""
    return os.path.join(spec.outputs.checkpoint_dir, "squad", f"step_{step}")


def squad_command(spec, step: int) -> list[str]:
    """run_squad's flags for the SQuAD evaluation at `step`: the --squad_* values, this run's
    vocabulary, precision, XLA plan and recompute mode, run_squad's defaults for the rest; it
    fine-tunes the model exported to <squad_directory>/model (a Hugging Face directory) with its
    checkpoints in <squad_directory>/checkpoints, and writes its outputs to squad_directory.
    run_pretraining parses the first evaluation's flags with run_squad's own parser before any
    pretraining, so a value run_squad refuses stops the run then, under its --squad_* name."""
    o, where = spec.options, squad_directory(spec, step)
    argv = [word for ours, theirs in SQUAD_FLAGS.items()
            if getattr(o, ours[2:]) is not None
            for word in (theirs, str(getattr(o, ours[2:])))]
    if o.squad_steps is not None:
        argv += ["--log_frequency", str(max(o.squad_steps, 1))]
    return argv + [
        "--load_from", "huggingface", "--checkpoint_path", os.path.join(where, "model"),
        "--spm_model", spec.vocabulary, "--precision", spec.execution.precision,
        "--output_dir", where, "--checkpoint_dir", os.path.join(where, "checkpoints"),
        "--log_dir", os.path.join(where, "logs"),
        "--cache_dir", os.path.join(spec.outputs.checkpoint_dir, "squad_cache"),
        "--no_progress", "--xla", "off" if spec.execution.eager else spec.execution.xla,
        "--recompute", spec.batching.recompute]
