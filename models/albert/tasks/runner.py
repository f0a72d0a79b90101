"""One run of a task, the same for every task: build -> start or resume -> train (evaluating every
--eval_frequency updates) -> evaluate -> export -> a closing summary.

The runner modules resolve their flags into a RunSpec (albert.cli.resolve.resolve_spec) and a Task
(albert.tasks); `run(task)` does the rest. Rank 0's spec is every rank's, and a refusal decided on
rank 0 (a run directory in use, a run that differs from the recorded one) stops every rank with
its message instead of leaving the others waiting at the next collective.
"""

from __future__ import annotations

import collections
import dataclasses
import importlib.metadata as md
import logging
import math
import os
import shlex
import signal
import subprocess
import sys
import threading
import time
from typing import NamedTuple

import keras
import tensorflow as tf

from albert.data.tokenization import load_tokenizer
from albert.errors import FlagError
from albert.io.eval_results import add_eval_results
from albert.io.pretrained import load_pretrained, replace_pretrained
from albert.io.run_record import Record, RunRecord
from albert.io.savedmodel import export_after_run
from albert.io.task_card import TASK_FILE, read_task_card, task_card
from albert.model.recompute import set_recompute
from albert.tasks import learned_nothing_warning
from albert.train import distributed
from albert.train.auto_batch import choose_auto_batch
from albert.train.checkpoint_store import CheckpointStore
from albert.train.loop import fit
from albert.train.memory import memory_plan_of
from albert.train.optimization import make_optimizer, schedule
from albert.train.precision import set_precision
from albert.train.run_dir import (
    lock_run_directory,
    mark_finished,
    release_unused_run_directory,
    start_state,
)
from albert.train.run_logging import MetricsLogger
from albert.train.run_spec import (
    TOOLKIT,
    RunSpec,
    check_fits,
    check_vocabulary,
    file_sha256,
    identity,
    model_config,
    toolkit_version,
)
from albert.train.trainer import Trainer
from albert.train.xla_plan import plan_for_run

logger = logging.getLogger("albert.tasks.runner")

# The metrics each task's evaluation may report (some only for some data: f1 of a classifier for
# two labels, exact_match for SQuAD v1.1, HasAns_/NoAns_/best_ for v2.0); higher is better for
# all of them but LOWER_IS_BETTER.
LOWER_IS_BETTER = ("loss",)

# A run's exit status besides 0 (finished) and the user's errors' 2 (albert.cli.flags.user_errors),
# the same in every runner and on every rank, named here for whoever acts on them (the shipped
# scripts, albert.sagemaker_entry). INTERRUPTED: stopped by SIGTERM with its progress in a
# checkpoint; the same command resumes it. It is the status a shell reports for a process that
# SIGTERM killed, so nothing that reads it (`run_pretraining && run_squad`, a Kubernetes Job, a
# script) takes an unfinished run for a finished one. EVALUATIONS_FAILED: the run finished and
# saved its model, but evaluations it was asked for gave no scores (SQuAD during pretraining
# whose run failed); the summary counts them.
INTERRUPTED = 128 + int(signal.SIGTERM)
EVALUATIONS_FAILED = 3


def run(task_class, spec: RunSpec) -> int:
    """Run the task of `spec` to the end; its exit status: 0 when it finished, INTERRUPTED when
    SIGTERM stopped it (a checkpoint holds its progress), EVALUATIONS_FAILED when it finished
    but some of its evaluations gave no scores. The task is
    built from rank 0's spec, so every rank reads the same files and records the same run."""
    started = process_started()
    dist = distributed.init()
    spec = distributed.on_chief(dist, lambda: spec)
    created = claim_run_directory(spec, dist) if spec.trains else []
    try:
        return _run(task_class(spec), dist, started)
    except BaseException:
        if created and dist.is_chief:
            release_unused_run_directory(spec.outputs.checkpoint_dir, created)
        raise


def environment() -> dict:
    """The command line and the versions that produced a run, for the record."""
    versions = {"python": sys.version.split()[0], "tensorflow": tf.__version__}
    if toolkit_version():
        versions[TOOLKIT] = toolkit_version()
    for name in ("keras", "horovod", "transformers", "sentencepiece", "numpy"):
        try:
            versions[name] = md.version(name)
        except md.PackageNotFoundError:
            continue
    main = getattr(sys.modules.get("__main__"), "__spec__", None)
    program = ["-m", main.name] if main is not None else sys.argv[:1]  # as typed: python -m ...
    return {"command": [os.path.basename(sys.executable), *program, *sys.argv[1:]],
            "versions": versions}


class Outcome(NamedTuple):
    """How the training phase ended: status "done", "stopped" (SIGTERM; a checkpoint holds the
    progress), "finished" (the run had already ended: nothing trained) or "evaluated" (an
    evaluation-only run: nothing to train), the step, and the run's evaluations."""
    status: str
    step: int
    evaluations: list


def _run(task, dist, started: float) -> int:
    """The phases, in order: build; start or resume, and train; evaluate; keep the best;
    export; summarise. Returns the exit status (see run)."""
    model, xla, auto_line = build(task, dist)
    spec = task.spec
    metrics = MetricsLogger(spec.outputs.log_dir, dist)
    tally = Tally(dist)
    try:
        if spec.trains:
            outcome = train(task, model, dist, metrics, xla, auto_line, tally=tally)
            if outcome.status == "stopped":
                if dist.is_chief:
                    print(f"stopped at step {outcome.step}; checkpoint in "
                          f"{spec.outputs.checkpoint_dir}; run the same command to resume "
                          f"(exit status {INTERRUPTED}: interrupted)", flush=True)
                return INTERRUPTED
        else:
            outcome = Outcome("evaluated", 0, task.evaluations(model, None, dist))
        final = evaluate(task, outcome, xla, metrics, tally)
        if spec.trains and outcome.status != "finished":
            for evaluation in outcome.evaluations:
                if evaluation.keeps_best:
                    keep_best(spec, model, final.get(evaluation.prefix), outcome.step, dist)
        task.after_evaluation(model, xla.gradient, dist)
        exported = export(task, model, dist)
        best = kept_best(spec, exported, dist) if spec.trains else None
    finally:
        metrics.close()
    if dist.is_chief:
        print(summary(task, outcome.status, outcome.step, time.time() - started, final, exported,
                      best, failed=tally.failures()), flush=True)
    # Rank 0's count is every rank's status (and, as a collective, the barrier at the end).
    return distributed.on_chief(dist, lambda: EVALUATIONS_FAILED if tally.failures() else 0)


class Tally:
    """Rank 0's count, per evaluation prefix, of the evaluations run and of those that gave no
    scores: a failed one (the SQuAD run of SQuAD during pretraining ending in an error, logged
    as a warning when it happens), which would otherwise leave only a missing line in the
    summary and an exit status of 0. Other ranks score nothing and count nothing."""

    def __init__(self, dist):
        self.counting = dist.is_chief
        self.ran, self.failed = collections.Counter(), collections.Counter()

    def record(self, evaluation, scores) -> None:
        if self.counting:
            self.ran[evaluation.prefix] += 1
            self.failed[evaluation.prefix] += not scores

    def failures(self) -> list[str]:
        """A phrase per prefix with failures, for the summary; [] when none failed."""
        return [f"{self.failed[p]} of {self.ran[p]} {p} evaluations failed (the warnings above "
                f"say why; exit status {EVALUATIONS_FAILED})" for p in self.ran if self.failed[p]]


def build(task, dist):
    """The run's precision and seed, the task's data (setup), the model, the XLA plan, a
    fine-tune's learning rate by the model's size when not given and, with
    --per_gpu_batch_size auto, the micro-batch; each folded into the spec as it is settled.
    Returns (the model, the XLA plan, the line that says why auto chose its micro-batch, or
    None)."""
    spec = task.spec
    set_precision(spec.execution.precision)
    # Rank 0's initial weights are broadcast to every rank; dropout masks are keyed by rank.
    keras.utils.set_random_seed(spec.execution.seed)
    tokenizer = load_tokenizer(spec.vocabulary) if task.needs_tokenizer else None
    settled = task.setup(dist, tokenizer)
    model = None
    if not spec.trains:
        model, by_model = task.fine_tuned_model(dist)
        settled = {**settled, **by_model}
    # The first fold: what the data settled (setup's; an evaluation-only run's model's: a
    # classifier's task and labels), before anything reads it: the model is built with those
    # labels, and the task reads them from its spec alone.
    spec = task.spec = spec.replace(**settled)
    settled = {}
    if model is None:
        model = build_model(task)
    check_fits(model.config, spec.options.max_seq_length)
    if tokenizer is not None:
        check_vocabulary(model.config, len(tokenizer), spec.vocabulary)
    task.check_model(model, dist)
    previous = recorded_run(spec, dist)
    xla = xla_plan(spec, dist, recorded=previous.xla)
    if spec.trains and spec.optimization.learning_rate is None:
        rate, why = task.default_learning_rate(model.config)
        settled["optimization"] = dataclasses.replace(spec.optimization, learning_rate=rate)
        if dist.is_chief:
            logger.info("learning rate %g: %s (--learning_rate to choose)", rate, why)
    auto_line = None
    if spec.trains and spec.batching.auto:
        settled["batching"], auto_line = auto_batching(task, model, dist, xla, previous)
    # The last fold: the learning rate the model's size chose (no --learning_rate) and the
    # micro-batch --per_gpu_batch_size auto chose, into the spec that every later reader (the
    # record, the evaluations, final/'s task card, the summary) sees; nothing replaces it after
    # this.
    task.spec = spec.replace(**settled)
    return model, xla, auto_line


def evaluate(task, outcome: Outcome, xla, metrics, tally: Tally | None = None) -> dict:
    """The final model's scores, {prefix: scores}, each logged at the run's last step (an
    evaluation training ran at that step is not run again). An already finished run is
    scored again only if its task says so (its summary). `tally` counts each evaluation run."""
    final = {}
    if outcome.status == "finished" and not task.rescore_finished:
        return final
    for evaluation in outcome.evaluations:
        again = evaluation.step == outcome.step  # its scores were taken (and counted) there
        scores = evaluation.final(xla.gradient, outcome.step)
        if tally is not None and not again:
            tally.record(evaluation, scores)
        if scores:
            final[evaluation.prefix] = scores
            metrics.log(evaluation.prefix, outcome.step, scores)
    return final


# The variables by which a launcher (horovodrun, mpirun, Slurm's PMI) tells a process that it is
# one rank of a job (albert.train.distributed.launched_by_horovod reads some of them).
LAUNCHER_VARIABLES = ("HOROVOD_", "OMPI_", "PMI_", "PMIX_")


def run_in_child(module: str, argv: list[str], log_file: str) -> str | None:
    """`python -m <module> <argv>` in a process of its own, alone (one process, whatever launcher
    started this one: without the launcher's variables it does not join the job, and
    albert.train.distributed.init gives it the first visible GPU, rank 0's): a run inside a
    run (SQuAD during pretraining) gets TensorFlow, the precision policy and the device to
    itself. Its command line is logged, its output (stdout and stderr) goes to `log_file`, and a
    SIGTERM this process receives meanwhile is passed on to it. None when it ended well; else
    one line: how it ended, where its output is, and its last line."""
    command = [sys.executable, "-m", module, *argv]
    env = {k: v for k, v in os.environ.items() if not k.startswith(LAUNCHER_VARIABLES)}
    os.makedirs(os.path.dirname(log_file) or ".", exist_ok=True)
    logger.info("running %s > %s 2>&1", shlex.join(command), shlex.quote(log_file))
    with open(log_file, "w", encoding="utf-8") as log:
        log.write(f"$ {shlex.join(command)}\n")
        log.flush()
        child = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=log,
                                 stderr=subprocess.STDOUT, env=env)
        code = _wait_passing_on_sigterm(child)
    if code == 0:
        return None
    how = f"exit {code}" if code > 0 else f"killed by {signal.Signals(-code).name}"
    last = _last_line(log_file)
    return f"{how}; its output is in {log_file}" + (f", ending: {last}" if last else "")


def _wait_passing_on_sigterm(child: subprocess.Popen) -> int:
    """child's exit status, once it ends. A SIGTERM meanwhile goes to the child too (a spot
    interruption should not wait for a whole fine-tuning), then to this process's own handler
    (the training loop's stop, or the default: end); an error here ends the child with it."""
    previous = signal.getsignal(signal.SIGTERM)
    # Only the main thread may handle signals; a process that ignores SIGTERM keeps doing so.
    passing = threading.current_thread() is threading.main_thread() and \
        previous != signal.SIG_IGN

    def pass_on(signum, frame):
        child.send_signal(signum)
        if callable(previous):
            previous(signum, frame)
        else:
            signal.signal(signum, signal.SIG_DFL)
            os.kill(os.getpid(), signum)

    if passing:
        signal.signal(signal.SIGTERM, pass_on)
    try:
        return child.wait()
    except BaseException:
        child.kill()
        child.wait()
        raise
    finally:
        if passing:
            signal.signal(signal.SIGTERM, previous if previous is not None else signal.SIG_DFL)


def _last_line(path: str) -> str:
    """The last non-empty line of a file (read from its end), or ""."""
    with open(path, "rb") as f:
        f.seek(max(0, os.path.getsize(path) - 4096))
        lines = f.read().decode("utf-8", "replace").strip().splitlines()
    return lines[-1].strip() if lines else ""


def process_started(_stat: str = "/proc/self/stat") -> float:
    """When this command started (time.time()'s clock): its duration counts the start-up too,
    TensorFlow's import and the flags' checks, which take a good part of a short run. Where /proc
    cannot tell, when this module was imported."""
    try:
        with open(_stat) as f:
            ticks = int(f.read().rsplit(")", 1)[1].split()[19])  # field 22: starttime
        with open("/proc/uptime") as f:
            uptime = float(f.read().split()[0])
        return time.time() - uptime + ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return _IMPORTED


_IMPORTED = time.time()


def claim_run_directory(spec: RunSpec, dist) -> list[str]:
    """Before any work (featurizing writes into the run's cache, which a second run on the same
    --output_dir would write at once): rank 0 takes the run directory's lock and reads its
    record, so a run in use or a record of the wrong shape is refused first. Returns the
    directories the lock made, deepest first (a start refused later removes them again)."""
    out = spec.outputs

    def claim():
        created, path = [], os.path.abspath(out.checkpoint_dir)
        while not os.path.exists(path):
            created.append(path)
            path = os.path.dirname(path)
        lock_run_directory(out.checkpoint_dir)
        if not out.overwrite_checkpoint_dir:
            RunRecord(out.checkpoint_dir).read()
        return created

    return distributed.on_chief(dist, claim)


def build_model(task):
    """The model a training run starts from: a released model directory (--load_from
    pretrained, Hugging Face or Google) or a new one from the spec's config."""
    spec, cls = task.spec, task.model_class()
    if spec.model.pretrained:
        if not spec.model.checkpoint_path:
            raise FlagError("--load_from pretrained needs --checkpoint_path (a local model "
                            "directory)")
        return load_pretrained(cls, spec.model.checkpoint_path, **task.model_options())
    return cls(model_config(spec.model, spec.vocabulary), **task.model_options()).build_for_config()


def xla_plan(spec: RunSpec, dist, recorded: dict | None = None):
    return plan_for_run(spec.execution, dist, recorded)


def recorded_run(spec: RunSpec, dist) -> Record:
    """The record of the run this training run would resume (rank 0's read), whose XLA and
    batch plans it keeps; an empty one when there is none, for an evaluation-only run and for
    --overwrite_checkpoint_dir."""
    out = spec.outputs
    if not spec.trains or out.overwrite_checkpoint_dir:
        return Record()
    return distributed.on_chief(dist, RunRecord(out.checkpoint_dir).load) or Record()


def on_gpu() -> bool:
    return bool(tf.config.list_physical_devices("GPU"))


def auto_batching(task, model, dist, xla, previous: Record):
    """--per_gpu_batch_size auto decided for this model (the recorded run's plan on a resume):
    (the new Batching, the line that says why)."""
    spec = task.spec
    set_recompute(model, spec.batching.recompute)  # the trial steps run as training will
    return choose_auto_batch(
        spec, model, dist, synthetic_batch=task.synthetic_batch, loss_fn=task.loss_fn,
        head=task.name, num_labels=task.num_labels, xla_gradient=xla.gradient, on_gpu=on_gpu(),
        recorded=previous.batch_plan)


class Training(NamedTuple):
    """What the training phase runs with (start's): the trainer and its checkpoint store, the
    batch plan, the number of updates and of training examples (None: a stream), the run's
    identity as run.json's spec and final/'s task card hold it, and how the run started
    (start_state's "resumed", "initialised" or "new")."""
    trainer: object
    checkpoints: object
    plan: object
    total_steps: int
    examples: int | None
    record: dict
    how: str


def train(task, model, dist, metrics, xla, auto_line: str | None,
          tally: Tally | None = None) -> Outcome:
    """Start or resume the run in --checkpoint_dir, then train `model` to its last update,
    evaluating on the way (each evaluation counted in `tally`); final/ holds the trained
    model."""
    run = start(task, model, dist, xla)
    if dist.is_chief:
        log_start(task, model, run, xla, auto_line)
    evaluations = task.evaluations(model, run.trainer, dist)
    step = int(run.trainer.step)
    if run.how == "resumed" and step >= run.total_steps:
        if dist.is_chief:
            already_finished(task, model, run)
        return Outcome("finished", step, evaluations)
    status = updates(task, model, run, evaluations, dist, metrics, xla, tally)
    step = int(run.trainer.step)
    if status == "done":
        if dist.is_chief:
            save_final(task, model, run.record)
        mark_finished(task.spec.outputs.checkpoint_dir, step, dist)
    return Outcome(status, step, evaluations)


def start(task, model, dist, xla) -> Training:
    """The batch plan, the number of updates, the trainer and its checkpoint store; then where
    the run starts (start_state: its own checkpoint, --checkpoint_path's weights, or the model
    as built), recorded in run.json."""
    spec = task.spec
    out, o = spec.outputs, spec.optimization
    set_recompute(model, spec.batching.recompute)
    plan = spec.batching.plan(dist.size)
    examples, total_steps = training_length(task, plan, dist)
    optimizer = make_optimizer(o.optimizer, model.trainable_variables, o.weight_decay,
                               bias_correction=o.bias_correction)
    trainer = Trainer(model, task.loss_fn, optimizer, schedule(o, total_steps), dist,
                      metric_names=task.metric_names, accum_steps=plan.accumulation,
                      precision=spec.execution.precision, xla=xla,
                      max_grad_norm=o.max_grad_norm,
                      fp16_allreduce=spec.execution.fp16_allreduce, seed=spec.execution.seed)
    checkpoints = CheckpointStore(out.checkpoint_dir, trainer.trackables(), dist,
                                  keep=out.keep_checkpoints, config=model.config)
    record = identity(spec, config=model.config, global_batch=plan.global_batch,
                      total_steps=total_steps, data=task.data_files())
    # A pretraining checkpoint holds the same backbone (model/albert/...); a task head keeps its
    # fresh initialisation.
    how = start_state(trainer, checkpoints, load_from=spec.model.load_from,
                      checkpoint_path=spec.model.checkpoint_path,
                      load_optimizer_state=spec.model.load_optimizer_state,
                      overwrite=out.overwrite_checkpoint_dir,
                      record=Record(started_from=spec.model.started_from(), xla=xla._asdict(),
                                    batch_plan=plan.as_dict(), total_steps=total_steps,
                                    spec=record, **environment(), finished=False))
    return Training(trainer, checkpoints, plan, total_steps, examples, record, how)


def training_length(task, plan, dist) -> tuple:
    """(training examples, or None for a stream; updates): --total_steps, or --num_train_epochs
    over the examples."""
    spec = task.spec
    examples = task.training_examples()
    if examples is not None and examples < dist.size * plan.micro_batch:
        raise FlagError(f"{spec.data.train} gives {examples} {task.unit}: too few for "
                        f"{dist.size} rank(s) x --per_gpu_batch_size {plan.micro_batch}")
    return examples, spec.total_steps or max(1, math.ceil(spec.num_train_epochs * examples
                                                          / plan.global_batch))


def log_start(task, model, run: Training, xla, auto_line: str | None) -> None:
    """What the run trains, with which plans and how much memory it needs (rank 0)."""
    spec, plan = task.spec, run.plan
    params = sum(int(tf.size(v)) for v in model.weights)
    logger.info("ALBERT %s: %.2fM parameters, precision %s, %s",
                spec.model.model_config or spec.model.model_size
                if not spec.model.pretrained else spec.model.checkpoint_path,
                params / 1e6, spec.execution.precision, xla.describe())
    if auto_line:
        logger.info("%s", auto_line)
    if run.examples is not None:
        logger.info("%s: %d %s, %d steps, warmup %d", spec.task, run.examples, task.unit,
                    run.total_steps, spec.optimization.warmup(run.total_steps))
    logger.info("%s", plan.describe(spec.options.max_seq_length, run.total_steps))
    memory = memory_plan_of(spec, model.config, plan, head=task.name, num_labels=task.num_labels,
                            device="gpu" if on_gpu() else "cpu")
    logger.info("%s", memory.describe())


def already_finished(task, model, run: Training) -> None:
    """The same command after its run ended: final/ made if it is missing, and a line that says
    there is nothing to train and how to train more (rank 0)."""
    out = task.spec.outputs
    final_dir = os.path.join(out.checkpoint_dir, "final")
    if not os.path.isdir(final_dir):
        save_final(task, model, run.record)
    print(f"this run already finished: {int(run.trainer.step)} of --total_steps "
          f"{run.total_steps} updates in {out.checkpoint_dir}; nothing to train (Hugging Face "
          f"export in {final_dir}). Raise --total_steps to train on, or use a new --output_dir / "
          "--checkpoint_dir or --overwrite_checkpoint_dir to train again.", flush=True)


def updates(task, model, run: Training, evaluations, dist, metrics, xla,
            tally: Tally | None = None) -> str:
    """The training loop over the task's data from where the run stands, evaluating when due
    (each counted in `tally`) and keeping the best model (--keep_best); "done" or "stopped"."""
    spec, trainer = task.spec, run.trainer
    out = spec.outputs
    batches = run.checkpoints.positions.open(
        lambda skip: task.training_data(run.plan, skip, dist), run.plan,
        int(trainer.iterations) if run.how == "resumed" else 0, int(trainer.step))

    def kept(evaluation, scores, step):
        if tally is not None:
            tally.record(evaluation, scores)
        if evaluation.keeps_best:
            keep_best(spec, model, scores, step, dist)

    return fit(trainer, batches, total_steps=run.total_steps, checkpoints=run.checkpoints,
               evaluations=evaluations, xla=xla.gradient, on_scores=kept, metrics=metrics,
               metrics_fn=task.metrics_fn, sequences_per_update=run.plan.global_batch,
               log_frequency=out.log_frequency, checkpoint_frequency=out.checkpoint_frequency,
               progress=out.progress,
               explain_data_error=lambda e: task.explain_data_error(e) or e)


def save_final(task, model, record: dict) -> str:
    """<checkpoint_dir>/final: the trained model in Hugging Face format with its vocabulary and
    (fine-tuned) its task card: the windows and labels it was tuned with (rank 0)."""
    spec = task.spec
    path = os.path.join(spec.outputs.checkpoint_dir, "final")
    replace_pretrained(model, path, spm_model=spec.vocabulary,
                       extra_json={TASK_FILE: task_card(record)} if task.card else None)
    return path


def export(task, model, dist) -> str | None:
    """--export_dir: the SavedModel of the model just trained (with --keep_best the best one
    kept), or of the fine-tuned model an evaluation-only run used (rank 0)."""
    spec = task.spec
    if not spec.outputs.export_dir or task.export_task is None:
        return None
    return export_after_run(spec, model, task.export_task, dist)


# -- --keep_best ----------------------------------------------------------------------------------

def keep_best(spec: RunSpec, model, scores: dict | None, step: int, dist) -> bool:
    """--keep_best METRIC: when `scores` beat every evaluation of this run so far (recorded in its
    run.json under "best"), the model goes to <checkpoint_dir>/best (a Hugging Face export with
    its task card). Returns whether it did (rank 0)."""
    metric = spec.outputs.keep_best
    if not metric or not dist.is_chief or not scores:
        return False
    if metric not in scores:
        logger.warning("--keep_best %s: this evaluation reports only %s; nothing kept", metric,
                       ", ".join(sorted(scores)))
        return False
    value = float(scores[metric])
    if not math.isfinite(value):
        return False  # a NaN correlation (one class predicted) is no model to keep
    directory = spec.outputs.checkpoint_dir
    record = RunRecord(directory)
    best = record.best()
    scored_on = evaluation_file(spec)
    if best and best.get("metric") == metric and math.isfinite(best["value"]):
        if {k: best.get(k) for k in scored_on} != scored_on:
            # Scores of two files measure two things: the old best is no bar for this file.
            logger.warning("--keep_best %s: the evaluation file is %s now, not %s as when the "
                           "best so far (%.4f at step %d) was scored: comparing afresh", metric,
                           scored_on["eval_file"], best.get("eval_file") or "(not recorded)",
                           best["value"], best["step"])
        else:
            better = value < best["value"] if metric in LOWER_IS_BETTER else value > best["value"]
            if not better:
                return False
    target = os.path.join(directory, "best")
    card = read_task_card(directory)
    replace_pretrained(model, target, spm_model=spec.vocabulary,
                       extra_json={TASK_FILE: card} if card else None)
    record.update(best={"metric": metric, "value": value, "step": step, **scored_on})
    logger.info("best %s so far: %.4f at step %d, kept in %s", metric, value, step, target)
    return True


def evaluation_file(spec: RunSpec) -> dict:
    """The file --keep_best's scores come from (a classifier's --eval_file, SQuAD's
    --predict_file), by real path and content, as the best score records it."""
    path = spec.data.eval or spec.data.predict
    if not path:
        return {}
    return {"eval_file": os.path.realpath(path), "eval_sha256": file_sha256(path)}


def kept_best(spec: RunSpec, exported: str | None, dist) -> dict | None:
    """With --keep_best: the model kept as best (its record entry and where it is, and whether
    --export_dir took it), also added to eval_results.json, so the scores there and in the
    summary are not taken for the exported model's (rank 0). None without --keep_best."""
    out = spec.outputs
    if not out.keep_best or not dist.is_chief:
        return None
    path = os.path.join(out.checkpoint_dir, "best")
    best = RunRecord(out.checkpoint_dir).best()
    if best and os.path.isdir(path):
        kept = {"model": "best", "path": path, **best}
    else:
        kept = {"model": "final", "metric": out.keep_best, "value": None, "step": None,
                "path": os.path.join(out.checkpoint_dir, "final")}
    kept["exported"] = exported
    if out.output_dir:
        add_eval_results(out.output_dir, keep_best=kept)
    return kept


# -- the closing summary --------------------------------------------------------------------------

def _elapsed(seconds: float) -> str:
    seconds = int(round(seconds))
    hours, rest = divmod(seconds, 3600)
    return f"{hours}h{rest // 60:02d}m{rest % 60:02d}s" if hours else \
        f"{rest // 60}m{rest % 60:02d}s"


def summary(task, status, step: int, seconds: float, final: dict, exported: str | None,
            best: dict | None = None, failed=()) -> str:
    """One closing line: what ran, how long the command took, the final scores against what
    the task's baseline would score, how many evaluations failed (`failed`: Tally.failures()),
    and with --keep_best (`best`: kept_best's) which model was kept and exported."""
    spec = task.spec
    what = ("evaluation only" if not spec.trains else
            f"{step} updates (already finished)" if status == "finished" else f"{step} updates")
    parts = [f"summary: {task.spec.task}, {what}, {_elapsed(seconds)}"]
    for prefix, scores in final.items():
        shown = task.headline(prefix, scores)
        if shown:
            # With --keep_best the final model may not be the one kept: say whose scores these are.
            parts.append(f"{prefix} {'of the final model ' if best else ''}{shown}")
    parts.extend(failed)
    baseline = task.baseline(final)
    if baseline:
        parts.append(f"baseline {baseline}")
    if spec.trains and task.learned_nothing(final):
        parts.append(learned_nothing_warning(spec, step, task.usual_rates))
    if spec.trains:
        parts.append(f"model in {os.path.join(spec.outputs.checkpoint_dir, 'final')}")
    if best and best["model"] == "best":
        parts.append(f"best {best['metric']} {best['value']:.4f} at step {best['step']} in "
                     f"{best['path']}")
    elif best:
        parts.append(f"no evaluation kept a best {best['metric']}: the final model stands")
    if exported:
        which = f" (the {best['model']} model)" if best else ""
        parts.append(f"SavedModel{which} in {exported}")
    if spec.outputs.log_dir:
        parts.append(f"logs in {spec.outputs.log_dir}")
    return "; ".join(parts)

