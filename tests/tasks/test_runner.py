"""What the task runner (albert.tasks.runner) decides around training: --keep_best checked before
any work and kept only when an evaluation beats every earlier one, the final evaluation not run
twice at one step, the closing summary line."""

import ast
import dataclasses
import json
import math
import os
import re
import sys
import time
import types

import pytest

from albert.cli.resolve import check_keep_best
from albert.errors import FlagError
from albert.tasks import Evaluation, Task, runner
from albert.tasks.classifier_options import ClassifierOptions
from albert.tasks.pretraining import PretrainingTask
from albert.train.distributed import Distributed
from albert.train.run_spec import Data, Execution, Optimization, Outputs, RunSpec

PROCESS_SEEN = time.time()  # this process started before its tests were imported


def classifier_spec(tmp_path, sample_vocab, keep_best=None, **changes):
    """A classifier's spec as run_classifier resolves it, with the run's directories under
    tmp_path/out."""
    for name in ("train.tsv", "dev.tsv"):
        (tmp_path / name).write_text("x")
    out = tmp_path / "out"
    return RunSpec(task="classification", options=ClassifierOptions(), vocabulary=sample_vocab,
                   data=Data(train=str(tmp_path / "train.tsv"), eval=str(tmp_path / "dev.tsv")),
                   outputs=Outputs(output_dir=str(out), checkpoint_dir=str(out / "checkpoints"),
                                   log_dir=str(out / "logs"), cache_dir=str(out / "cache"),
                                   keep_best=keep_best), **changes)


def test_keep_best_is_checked_before_any_work(tmp_path, sample_vocab):
    spec = classifier_spec(tmp_path, sample_vocab, "mcc")
    check_keep_best(spec, ("accuracy", "mcc", "loss"), "dev.tsv", "--eval_file")
    with pytest.raises(FlagError, match="--keep_best mcc is no metric this evaluation reports; "
                                        "one of accuracy, loss"):
        check_keep_best(spec, ("accuracy", "loss"), "dev.tsv", "--eval_file")
    with pytest.raises(FlagError, match="--keep_best mcc needs --eval_file to evaluate"):
        check_keep_best(spec, ("mcc",), None, "--eval_file")
    plain = classifier_spec(tmp_path, sample_vocab)
    check_keep_best(plain, (), None, "--eval_file")  # not asked: nothing to check


def test_keep_best_keeps_only_an_improvement_and_records_it(tmp_path, sample_vocab, monkeypatch):
    kept = []
    monkeypatch.setattr(runner, "replace_pretrained",
                        lambda model, target, **kwargs: kept.append(target))
    loss = classifier_spec(tmp_path, sample_vocab, "loss")
    directory = tmp_path / "out" / "checkpoints"
    directory.mkdir(parents=True)
    dist = Distributed()
    steps = [(2, 0.9, True), (4, 0.7, True), (6, 0.8, False), (8, math.nan, False),
             (10, 0.7, False)]
    for step, value, better in steps:
        assert runner.keep_best(loss, None, {"loss": value, "accuracy": 0.5}, step, dist) is better
    assert kept == [str(directory / "best")] * 2
    record = json.loads((directory / "run.json").read_text())
    assert record["best"] == {"metric": "loss", "value": 0.7, "step": 4,
                              **runner.evaluation_file(loss)}
    # Higher is better for every other metric; another metric starts over.
    accuracy = classifier_spec(tmp_path, sample_vocab, "accuracy")
    assert runner.keep_best(accuracy, None, {"accuracy": 0.1}, 12, dist)
    assert not runner.keep_best(accuracy, None, {"accuracy": 0.05}, 14, dist)
    assert runner.keep_best(accuracy, None, {"accuracy": 0.2}, 16, dist)
    # Not asked, no scores, a metric the scores lack, or not rank 0: nothing kept.
    assert not runner.keep_best(classifier_spec(tmp_path, sample_vocab), None, {"loss": 0.1}, 18,
                                dist)
    assert not runner.keep_best(accuracy, None, None, 18, dist)
    assert not runner.keep_best(accuracy, None, {"loss": 0.1}, 18, dist)

    class Second(Distributed):
        rank, size = 1, 2

    assert not runner.keep_best(accuracy, None, {"accuracy": 0.9}, 18, Second())
    assert len(kept) == 4


def test_the_final_evaluation_reuses_one_at_the_same_step():
    """An evaluation-only run, or one whose last periodic scoring fell on its last step (a run
    resumed at it), scores the final model once."""
    calls = []
    evaluation = Evaluation("eval", 5, lambda xla, step: calls.append(step) or {"step": step})
    assert evaluation.due(5, 10) and not evaluation.due(10, 10) and not evaluation.due(6, 10)
    assert evaluation(False, 5) == {"step": 5}
    assert evaluation.final(False, 5) == {"step": 5} and calls == [5]
    assert evaluation.final(False, 7) == {"step": 7} and calls == [5, 7]
    assert not Evaluation("val", 0, None).due(5, 10)  # 0: at the end only


class _Scored(Task):
    name = "classification"

    def baseline(self, final):
        return "majority class 0.5000"


def test_the_summary_says_what_ran_how_long_its_scores_and_where_things_are(tmp_path,
                                                                          sample_vocab):
    task = _Scored(classifier_spec(tmp_path, sample_vocab))
    line = runner.summary(task, "done", 40, 3725.4, {"eval": {"accuracy": 0.75, "note": "x"}},
                          "/serving/1")
    out = tmp_path / "out"
    assert line.startswith("summary: classification, 40 updates, 1h02m05s")
    for part in ("eval accuracy 0.7500", "baseline majority class 0.5000",
                 f"model in {out / 'checkpoints' / 'final'}", "SavedModel in /serving/1",
                 f"logs in {out / 'logs'}"):
        assert part in line, part
    assert "note" not in line
    finished = runner.summary(task, "finished", 40, 65, {}, None)
    assert finished.startswith("summary: classification, 40 updates (already finished), 1m05s")
    assert "SavedModel" not in finished


def test_keep_best_starts_afresh_when_the_evaluation_file_changes(tmp_path, sample_vocab,
                                                                  monkeypatch, caplog):
    """Issue 34 item 5: the best records the evaluation file (real path and checksum); a score
    on another file (a new path, or new content under the old one) is not measured against it."""
    monkeypatch.setattr(runner, "replace_pretrained", lambda model, target, **kwargs: None)
    spec = classifier_spec(tmp_path, sample_vocab, "accuracy")
    (tmp_path / "out" / "checkpoints").mkdir(parents=True)
    dist = Distributed()
    assert runner.keep_best(spec, None, {"accuracy": 0.9}, 2, dist)
    best = json.loads((tmp_path / "out" / "checkpoints" / "run.json").read_text())["best"]
    assert best["eval_file"] == str((tmp_path / "dev.tsv").resolve())
    assert len(best["eval_sha256"]) == 64
    assert not runner.keep_best(spec, None, {"accuracy": 0.5}, 4, dist)
    # The same path, other content: a lower score on it becomes the best, and it says why.
    (tmp_path / "dev.tsv").write_text("other rows\n")
    with caplog.at_level("WARNING"):
        assert runner.keep_best(spec, None, {"accuracy": 0.5}, 6, dist)
    assert (f"--keep_best accuracy: the evaluation file is {(tmp_path / 'dev.tsv').resolve()} "
            f"now, not {best['eval_file']} as when the best so far (0.9000 at step 2) was "
            "scored: comparing afresh") in caplog.text
    assert not runner.keep_best(spec, None, {"accuracy": 0.4}, 8, dist)
    # Another file.
    (tmp_path / "dev2.tsv").write_text("x")
    moved = spec.replace(data=Data(train=spec.data.train, eval=str(tmp_path / "dev2.tsv")))
    assert runner.keep_best(moved, None, {"accuracy": 0.3}, 10, dist)
    record = json.loads((tmp_path / "out" / "checkpoints" / "run.json").read_text())
    assert record["best"]["step"] == 10
    assert record["best"]["eval_file"] == str((tmp_path / "dev2.tsv").resolve())


def test_with_keep_best_the_summary_and_eval_results_name_the_exported_model(tmp_path,
                                                                            sample_vocab):
    """Issue 34 item 11: the final model's scores are said to be its own, and which model was
    kept and exported (its step and score) is in the summary line and eval_results.json."""
    spec = classifier_spec(tmp_path, sample_vocab, "loss")
    out = tmp_path / "out"
    (out / "checkpoints" / "best").mkdir(parents=True)
    best = {"metric": "loss", "value": 0.25, "step": 4, **runner.evaluation_file(spec)}
    (out / "checkpoints" / "run.json").write_text(json.dumps({"best": best}))
    (out / "eval_results.json").write_text(json.dumps({"loss": 0.5, "step": 8}))
    kept = runner.kept_best(spec, "/serving/1", Distributed())
    results = json.loads((out / "eval_results.json").read_text())
    assert results == {"loss": 0.5, "step": 8, "keep_best": {
        **best, "model": "best", "path": str(out / "checkpoints" / "best"),
        "exported": "/serving/1"}}
    line = runner.summary(_Scored(spec), "done", 8, 30, {"eval": {"loss": 0.5}}, "/serving/1",
                          kept)
    for part in ("eval of the final model loss 0.5000",
                 f"best loss 0.2500 at step 4 in {out / 'checkpoints' / 'best'}",
                 "SavedModel (the best model) in /serving/1"):
        assert part in line, part
    # No evaluation kept one (none scored, or every score NaN): the final model was exported.
    (out / "checkpoints" / "run.json").write_text("{}")
    (out / "checkpoints" / "best").rmdir()
    kept = runner.kept_best(spec, "/serving/1", Distributed())
    assert kept["model"] == "final" and kept["value"] is None
    line = runner.summary(_Scored(spec), "done", 8, 30, {}, "/serving/1", kept)
    assert "no evaluation kept a best loss: the final model stands" in line
    assert "SavedModel (the final model) in /serving/1" in line
    assert json.loads((out / "eval_results.json").read_text())["keep_best"]["model"] == "final"


def test_the_summary_duration_counts_the_command_s_start_up(tmp_path, sample_vocab, monkeypatch,
                                                           capsys):
    """Issue 34 item 12: the duration is the command's, from the process's start (TensorFlow's
    import and the flag checks included), not from when the runner began its work."""
    started = runner.process_started()
    assert started <= PROCESS_SEEN and started > PROCESS_SEEN - 7 * 86400
    assert runner.process_started(str(tmp_path / "no-such-stat")) == runner._IMPORTED
    monkeypatch.setattr(runner, "process_started", lambda: time.time() - 3725)
    spec = classifier_spec(tmp_path, sample_vocab, execution=Execution(xla="off"))
    assert runner.run(_EvaluatedOnly, spec.replace(data=Data(eval=spec.data.eval))) == 0
    line = [x for x in capsys.readouterr().out.splitlines() if x.startswith("summary: ")][0]
    assert re.match(r"summary: classification, evaluation only, 1h\d\dm\d\ds;", line), line


class _EvaluatedOnly(_Scored):
    """An evaluation-only task without a model or data to read: what run() does around it."""
    needs_tokenizer = False

    def fine_tuned_model(self, dist):
        return types.SimpleNamespace(config=types.SimpleNamespace(
            max_position_embeddings=512)), {}

    def evaluations(self, model, trainer, dist):
        return [Evaluation("eval", 0, lambda xla, step: {"accuracy": 0.5})]


def test_a_fine_tune_that_ended_at_its_baseline_says_so_and_why(tmp_path, sample_vocab):
    """Issue 33 item 4: two equal numbers (final accuracy, majority class) are not left for the
    reader to compare: the summary says the model learned nothing and names the likely causes."""
    from albert.tasks.classification import ClassifierTask

    task = ClassifierTask(classifier_spec(
        tmp_path, sample_vocab, optimization=Optimization(learning_rate=2e-5)))
    task.examples = {"train": [types.SimpleNamespace(label="no")] * 3,
                     "eval": [types.SimpleNamespace(label=x) for x in ["no"] * 75 + ["yes"] * 25]}
    flat = runner.summary(task, "done", 120, 60, {"eval": {"accuracy": 0.75}}, None)
    assert "baseline majority class (no): accuracy 0.7500" in flat
    assert ("WARNING: the model learned nothing: its scores are the baseline's. Likely causes: "
            "too few updates (120), or a --learning_rate that does not suit this model's size "
            "(2e-05 here; a tiny or small model fine-tunes at 1e-4 to 1e-3") in flat
    learned = runner.summary(task, "done", 120, 60, {"eval": {"accuracy": 0.93}}, None)
    assert "learned nothing" not in learned


class _Settling(_EvaluatedOnly):
    """An evaluation-only task whose data settles its task and labels; its evaluation keeps the
    spec it sees."""
    seen = []

    def setup(self, dist, tokenizer):
        return {"task": "regression",
                "options": dataclasses.replace(self.spec.options, labels=("a", "b"))}

    def evaluations(self, model, trainer, dist):
        self.seen.append(self.spec)
        return super().evaluations(model, trainer, dist)


def test_what_setup_settles_is_folded_into_the_spec_every_later_step_sees(tmp_path,
                                                                         sample_vocab):
    spec = classifier_spec(tmp_path, sample_vocab, execution=Execution(xla="off"))
    assert runner.run(_Settling, spec.replace(data=Data(eval=spec.data.eval))) == 0
    (seen,) = _Settling.seen
    assert (seen.task, seen.options.labels) == ("regression", ("a", "b"))
    assert seen.replace(task="classification", options=spec.options) == spec.replace(
        data=Data(eval=spec.data.eval))  # nothing else changed


def test_the_spec_is_replaced_in_one_place_and_the_flags_are_never_written():
    """Issue 36 item 1: a task's spec is set when it is built and replaced once, by the runner's
    fold; albert.cli.resolve builds values from the parsed flags and never writes onto them."""
    import pathlib

    import albert

    root = pathlib.Path(albert.__file__).parent
    spec_writes, flag_writes = [], []
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text())
        for function in ast.walk(tree):
            if not isinstance(function, ast.FunctionDef):
                continue
            for node in ast.walk(function):
                targets = node.targets if isinstance(node, ast.Assign) else \
                    [node.target] if isinstance(node, ast.AugAssign | ast.AnnAssign) else []
                for target in targets:
                    if isinstance(target, ast.Attribute) and target.attr == "spec":
                        spec_writes.append(f"{path.relative_to(root)}:{function.name}:"
                                           f"{ast.unparse(target)}")
                    if isinstance(target, ast.Attribute) and \
                            ast.unparse(target.value) == "args":
                        flag_writes.append(f"{path.relative_to(root)}:{function.name}")
                if isinstance(node, ast.Call) and ast.unparse(node.func) == "setattr" and \
                        node.args and ast.unparse(node.args[0]) == "args":
                    flag_writes.append(f"{path.relative_to(root)}:{function.name}")
    assert sorted(set(spec_writes)) == ["tasks/__init__.py:__init__:self.spec",
                                        "tasks/runner.py:build:task.spec"]
    assert [w for w in flag_writes if w.startswith("cli/resolve.py")] == []


# A stand-in command for run_in_child: it says which launcher variables and flags it was given,
# then ends with the status its first flag asks for ("sleep": it waits to be stopped).
STAND_IN = """
import os, sys, time
print("launcher:", sorted(k for k in os.environ if k.startswith(("HOROVOD_", "OMPI_", "PMI"))))
print("argv:", sys.argv[1:], flush=True)
if sys.argv[1] == "sleep":
    time.sleep(120)
print("error: the stand-in's last words", file=sys.stderr)
sys.exit(int(sys.argv[1]))
"""


def _stand_in(tmp_path, monkeypatch):
    (tmp_path / "stand_in.py").write_text(STAND_IN)
    monkeypatch.setenv("PYTHONPATH", f"{tmp_path}{os.pathsep}{os.environ.get('PYTHONPATH', '')}")


def test_a_command_in_a_child_process_runs_alone_logged_with_its_output_in_a_file(
        tmp_path, monkeypatch, caplog):
    """SQuAD during pretraining (albert.tasks.pretraining) is `python -m albert.run_squad` in a
    process of its own: one process even when a launcher started its parent (a child that saw
    Horovod's variables would join the job and wait for a second rank), its command line
    logged as a user reruns it, its output kept in a file, a failure one line naming it."""
    import logging
    import shlex

    from albert.train.distributed import _LAUNCHER_VARS

    _stand_in(tmp_path, monkeypatch)
    for name in (*_LAUNCHER_VARS, "HOROVOD_SIZE", "OMPI_COMM_WORLD_SIZE", "PMI_SIZE"):
        monkeypatch.setenv(name, "1")
    log = tmp_path / "step_2" / "run.log"
    with caplog.at_level(logging.INFO, logger="albert.tasks.runner"):
        failure = runner.run_in_child("stand_in", ["3", "--a b", "it's"], str(log))
    [line] = [r.getMessage() for r in caplog.records if r.getMessage().startswith("running ")]
    command = line[len("running "):].rsplit(" > ", 1)[0]
    assert shlex.split(command) == [sys.executable, "-m", "stand_in", "3", "--a b", "it's"]
    assert line.endswith(f" > {shlex.quote(str(log))} 2>&1")
    text = log.read_text()
    assert "launcher: []\n" in text and "argv: ['3', '--a b', \"it's\"]" in text
    assert failure == (f"exit 3; its output is in {log}, ending: error: the stand-in's last "
                       "words")
    assert runner.run_in_child("stand_in", ["0"], str(log)) is None
    assert "argv: ['0']" in log.read_text() and "argv: ['3'" not in log.read_text()


def test_a_sigterm_while_a_child_runs_stops_the_child_and_reaches_this_process_s_handler(
        tmp_path, monkeypatch):
    """A spot interruption while SQuAD during pretraining runs: the child stops at once instead
    of fine-tuning on past the notice, and the training loop's handler still hears of it."""
    import signal
    import threading

    _stand_in(tmp_path, monkeypatch)
    heard = []

    def handler(signum, frame):
        heard.append(signum)

    previous = signal.signal(signal.SIGTERM, handler)
    log = tmp_path / "run.log"

    def stop_once_started():  # the child's first lines are in its log
        deadline = time.time() + 30
        while time.time() < deadline and "argv:" not in (log.read_text() if log.exists()
                                                         else ""):
            time.sleep(0.1)
        os.kill(os.getpid(), signal.SIGTERM)

    timer = threading.Thread(target=stop_once_started)
    try:
        started = time.time()
        timer.start()
        failure = runner.run_in_child("stand_in", ["sleep"], str(log))
        timer.join()
        assert signal.getsignal(signal.SIGTERM) is handler  # given back
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert time.time() - started < 60
    assert failure == f"killed by SIGTERM; its output is in {log}, ending: argv: ['sleep']"
    assert heard == [signal.SIGTERM]


class _Quiet:
    """A MetricsLogger that keeps what it is given."""

    def __init__(self, *args):
        self.logged = []

    def log(self, prefix, step, values):
        self.logged.append((prefix, step))

    def close(self):
        pass


def _run_with_fake_training(monkeypatch, tmp_path, sample_vocab, loop_status, scores_by_step,
                            evaluation=None):
    """runner._run over a 4-update training whose loop (albert.train.loop.fit) is a stand-in
    that evaluates at update 2 as the loop does and ends with `loop_status`; the in-run
    evaluation "squad" gives scores_by_step[step] ({} : failed), or is `evaluation`. Returns
    (status, stdout)."""
    import contextlib
    import io

    tmp_path.mkdir(exist_ok=True)
    spec = classifier_spec(tmp_path, sample_vocab)
    trainer = types.SimpleNamespace(step=0, iterations=0)
    run = runner.Training(trainer=trainer, checkpoints=types.SimpleNamespace(
        positions=types.SimpleNamespace(open=lambda *a: iter(()))), plan=types.SimpleNamespace(
        global_batch=8), total_steps=4, examples=None, record={}, how="new")

    def fit(trainer, batches, *, total_steps, evaluations, on_scores, xla, **kwargs):
        for evaluation in evaluations:
            on_scores(evaluation, evaluation(xla, 2), 2)
        if loop_status == "stopped":
            trainer.step = 3
            return "stopped"
        trainer.step = total_steps
        return "done"

    class Task(_Scored):
        def evaluations(self, model, trainer, dist):
            return [evaluation or Evaluation("squad", 2, lambda xla, step: scores_by_step[step])]

    monkeypatch.setattr(runner, "build", lambda task, dist: (None, types.SimpleNamespace(
        gradient=False), None))
    monkeypatch.setattr(runner, "start", lambda task, model, dist, xla: run)
    monkeypatch.setattr(runner, "log_start", lambda *a: None)
    monkeypatch.setattr(runner, "save_final", lambda *a: None)
    monkeypatch.setattr(runner, "mark_finished", lambda *a: None)
    monkeypatch.setattr(runner, "fit", fit)
    monkeypatch.setattr(runner, "MetricsLogger", _Quiet)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        status = runner._run(Task(spec), Distributed(), time.time())
    return status, out.getvalue()


def test_failed_evaluations_are_counted_in_the_summary_and_the_exit_status(
        tmp_path, sample_vocab, monkeypatch):
    """SQuAD during pretraining whose runs fail (issue 50 item 8): the run used to exit 0 with a
    summary that did not mention them."""
    status, out = _run_with_fake_training(monkeypatch, tmp_path, sample_vocab, "done",
                                          {2: {}, 4: {"f1": 40.0}})
    assert status == runner.EVALUATIONS_FAILED == 3
    [line] = [line for line in out.splitlines() if line.startswith("summary: ")]
    assert "1 of 2 squad evaluations failed (the warnings above say why; exit status 3)" in line
    assert "squad f1 40.0000" in line
    status, out = _run_with_fake_training(monkeypatch, tmp_path / "all", sample_vocab, "done",
                                          {2: {}, 4: {}})
    assert status == 3 and "2 of 2 squad evaluations failed" in out
    # None failed: a finished run's 0, and no such words.
    status, out = _run_with_fake_training(monkeypatch, tmp_path / "ok", sample_vocab, "done",
                                          {2: {"f1": 30.0}, 4: {"f1": 40.0}})
    assert status == 0 and "evaluations failed" not in out


# Its evaluations are run_squad processes (each imports TensorFlow before it refuses).
@pytest.mark.e2e
def test_an_in_run_squad_evaluation_is_a_logged_run_squad_command_and_a_failed_one_is_counted(
        tmp_path, sample_records, sample_vocab, monkeypatch, caplog):
    """SQuAD during pretraining as run_pretraining resolves it: each evaluation's command line
    is logged and is run_squad's (its parser takes it: the --squad_* values, this step's model
    and output directory), its output is in <checkpoint_dir>/squad/step_N/run_squad.log, and a
    run_squad that fails is one warning naming that log and its exit status, counted in the
    summary and the exit status (3)."""
    import logging
    import shlex

    from helpers import base_args

    import albert.tasks.pretraining as pretraining
    from albert import run_pretraining, run_squad
    from albert.demo.squad_sample import write_sample

    train, dev = write_sample(str(tmp_path / "sq"), train_questions=16, dev_questions=8)
    spec = run_pretraining.resolve(run_pretraining.parse_args(base_args(
        sample_records, sample_vocab, tmp_path, **{
            "--squad_frequency": "2", "--squad_train_file": train, "--squad_predict_file": dev,
            "--squad_max_seq_length": "128", "--squad_learning_rate": "3e-5"})))
    os.remove(train)  # gone after the start's checks: run_squad refuses it, before any training
    # The export of the weights (TensorFlow's) is not what this test is about.
    monkeypatch.setattr(pretraining, "save_pretrained",
                        lambda model, path, spm_model: os.makedirs(path))
    [evaluation] = PretrainingTask(spec).evaluations(None, None, Distributed())
    with caplog.at_level(logging.INFO):
        status, out = _run_with_fake_training(monkeypatch, tmp_path / "run", sample_vocab,
                                              "done", None, evaluation=evaluation)
    assert status == runner.EVALUATIONS_FAILED == 3
    assert "2 of 2 squad evaluations failed" in out
    commands = [r.getMessage() for r in caplog.records if r.getMessage().startswith("running ")]
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(commands) == len(warnings) == 2
    for step, command, warning in zip((2, 4), commands, warnings, strict=True):
        where = tmp_path / "ckpt" / "squad" / f"step_{step}"
        python, m, module, *argv = shlex.split(command[len("running "):].rsplit(" > ", 1)[0])
        assert (python, m, module) == (sys.executable, "-m", "albert.run_squad")
        args = run_squad.parse_args(argv)
        assert (args.train_file, args.predict_file, args.max_seq_length, args.learning_rate,
                args.total_steps, args.per_gpu_batch_size) == (train, dev, 128, 3e-5, 300, 16)
        assert (args.load_from, args.checkpoint_path, args.output_dir, args.spm_model) == (
            "huggingface", str(where / "model"), str(where), sample_vocab)
        log = where / "run_squad.log"
        assert f"error: --train_file {train} does not exist" in log.read_text()
        assert warning.startswith(f"SQuAD evaluation at step {step} failed (exit 2; its output "
                                  f"is in {log}, ending: error: --train_file {train} does not "
                                  "exist); its model and checkpoints are kept in "), warning
        assert "\n" not in warning and (where / "model").is_dir()  # the command reruns as is


def test_a_run_stopped_by_sigterm_exits_with_the_interrupted_status(tmp_path, sample_vocab,
                                                                    monkeypatch):
    status, out = _run_with_fake_training(monkeypatch, tmp_path, sample_vocab, "stopped",
                                          {2: {"f1": 30.0}})
    assert status == runner.INTERRUPTED == 143
    assert (f"stopped at step 3; checkpoint in {tmp_path / 'out' / 'checkpoints'}; run the same "
            "command to resume (exit status 143: interrupted)") in out
    assert "summary: " not in out


def test_the_run_a_training_run_would_resume_is_read_as_a_record(tmp_path):
    """recorded_run hands the XLA and batch plans on as run.json's Record: the recorded plans of
    the run in --checkpoint_dir, nothing with --overwrite_checkpoint_dir, for an evaluation-only
    run, or in a new directory."""
    from albert.io.run_record import Record, RunRecord

    xla = {"gradient": True, "update": False, "reason": "auto: faster"}
    plan = {"ranks": 1, "micro_batch": 4, "accumulation": 2, "global_batch": 8}
    RunRecord(str(tmp_path / "run")).write({"xla": xla, "batch_plan": plan, "total_steps": 9})

    def spec(directory, train="t", overwrite=False):
        return RunSpec(task="classification", options=ClassifierOptions(), data=Data(train=train),
                       outputs=Outputs(checkpoint_dir=str(directory),
                                       overwrite_checkpoint_dir=overwrite))

    record = runner.recorded_run(spec(tmp_path / "run"), Distributed())
    assert isinstance(record, Record)
    assert (record.xla, record.batch_plan, record.total_steps) == (xla, plan, 9)
    for other in (spec(tmp_path / "run", overwrite=True), spec(tmp_path / "run", train=None),
                  spec(tmp_path / "new")):
        assert runner.recorded_run(other, Distributed()) == Record()
