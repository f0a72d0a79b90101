"""What the task runner (albert.tasks.runner) decides around training: --keep_best checked before
any work and kept only when an evaluation beats every earlier one, the final evaluation not run
twice at one step, the closing summary line."""

import json
import math

import pytest

from albert.errors import FlagError
from albert.tasks import Evaluation, Task, runner
from albert.train.distributed import Distributed


def classifier_spec(tmp_path, sample_vocab, *flags):
    from albert import run_classifier

    for name in ("train.tsv", "dev.tsv"):
        (tmp_path / name).write_text("x")
    return run_classifier.resolve(run_classifier.parse_args([
        "--train_file", str(tmp_path / "train.tsv"), "--eval_file", str(tmp_path / "dev.tsv"),
        "--spm_model", sample_vocab, "--output_dir", str(tmp_path / "out"), *flags]))


def test_keep_best_is_checked_before_any_work(tmp_path, sample_vocab):
    spec = classifier_spec(tmp_path, sample_vocab, "--keep_best", "mcc")
    runner.check_keep_best(spec, ("accuracy", "mcc", "loss"), "dev.tsv", "--eval_file")
    with pytest.raises(FlagError, match="--keep_best mcc is no metric this evaluation reports; "
                                        "one of accuracy, loss"):
        runner.check_keep_best(spec, ("accuracy", "loss"), "dev.tsv", "--eval_file")
    with pytest.raises(FlagError, match="--keep_best mcc needs --eval_file to evaluate"):
        runner.check_keep_best(spec, ("mcc",), None, "--eval_file")
    plain = classifier_spec(tmp_path, sample_vocab)
    runner.check_keep_best(plain, (), None, "--eval_file")  # not asked: nothing to check


def test_keep_best_keeps_only_an_improvement_and_records_it(tmp_path, sample_vocab, monkeypatch):
    kept = []
    monkeypatch.setattr(runner, "save_pretrained",
                        lambda model, target, **kwargs: kept.append(target))
    loss = classifier_spec(tmp_path, sample_vocab, "--keep_best", "loss")
    directory = tmp_path / "out" / "checkpoints"
    directory.mkdir(parents=True)
    dist = Distributed()
    steps = [(2, 0.9, True), (4, 0.7, True), (6, 0.8, False), (8, math.nan, False),
             (10, 0.7, False)]
    for step, value, better in steps:
        assert runner.keep_best(loss, None, {"loss": value, "accuracy": 0.5}, step, dist) is better
    assert kept == [str(directory / "best")] * 2
    record = json.loads((directory / "run.json").read_text())
    assert record["best"] == {"metric": "loss", "value": 0.7, "step": 4}
    # Higher is better for every other metric; another metric starts over.
    accuracy = classifier_spec(tmp_path, sample_vocab, "--keep_best", "accuracy")
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


def test_the_final_evaluation_reuses_a_periodic_one_at_the_same_step():
    calls = []
    tracked = runner.Tracked(Evaluation("eval", 5, lambda xla, step: calls.append(step)
                                        or {"step": step}))
    assert (tracked.prefix, tracked.frequency) == ("eval", 5)
    assert tracked(False, 5) == {"step": 5}
    assert tracked.final(False, 5) == {"step": 5} and calls == [5]
    assert tracked.final(False, 7) == {"step": 7} and calls == [5, 7]


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
