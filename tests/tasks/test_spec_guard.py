"""Issue 52 point 2: the run spec is the only truth. A task holds nothing the data settles (a
classifier's task, labels, their number): those are the spec's options, settled by setup (or, in
an evaluation-only run, by the model it loads), folded in by the runner's build, and read from the
spec after. The task's own attributes are what its files held and where their features are cached;
none of them changes once build is done. (That only runner.build replaces a task's spec is
tests/tasks/test_runner.py's
test_the_spec_is_replaced_in_one_place_and_the_flags_are_never_written.)
"""

import copy
import json

import pytest

from albert.tasks import runner
from albert.tasks.classification import ClassifierTask
from albert.tasks.classifier_options import ClassifierOptions
from albert.train.run_spec import (
    Batching,
    Data,
    Execution,
    ModelSource,
    Optimization,
    Outputs,
    RunSpec,
)

# What a classifier reads from its files: the examples, the tokenizer that featurizes them and
# the caches of their features. Nothing else of the task's own may be set after it is made.
DATA_READ = {"tokenizer", "examples", "train_prefix", "eval_prefix"}
ROWS = ["sentence\tlabel", "a good film\t0.9", "a bad film\t0.1", "fine\t0.6", "awful\t0.0"]


def snapshot(task) -> dict:
    """The task's own attributes (its spec aside) as they are now: containers copied (a value
    set into one later shows), every other value the object itself."""
    return {k: copy.copy(v) if isinstance(v, dict | list | set) else v
            for k, v in vars(task).items() if k != "spec"}


class Watched(ClassifierTask):
    """A classifier whose attributes are taken when it is made, when its part of build is done
    and when the run is over (after its last evaluation)."""

    seen = {}

    def __init__(self, spec):
        super().__init__(spec)
        self.seen.clear()
        self.seen["made"] = snapshot(self)

    def check_model(self, model, dist):
        super().check_model(model, dist)  # the task's last step in build
        self.seen["built"] = snapshot(self)

    def after_evaluation(self, model, xla, dist):
        super().after_evaluation(model, xla, dist)
        self.seen["run"], self.seen["spec"] = snapshot(self), self.spec


def spec_of(tmp_path, sample_vocab, name, **data):
    out = tmp_path / name
    return RunSpec(task="classification", options=ClassifierOptions(max_seq_length=16),
                   vocabulary=sample_vocab, data=Data(**data),
                   model=ModelSource(model_size="tiny"), total_steps=1,
                   optimization=Optimization(learning_rate=1e-3),
                   batching=Batching(per_gpu_batch_size=2),
                   execution=Execution(xla="off"),
                   outputs=Outputs(output_dir=str(out), checkpoint_dir=str(out / "checkpoints"),
                                   log_dir=str(out / "logs"), cache_dir=str(out / "cache"),
                                   progress=False))


def changed(before: dict, after: dict) -> set:
    return {k for k in set(before) | set(after)
            if k not in before or k not in after or not _same(after[k], before[k])}


def _same(a, b) -> bool:
    if a is b:
        return True
    try:
        return bool(a == b)
    except (TypeError, ValueError):  # arrays and the like: the same object or changed
        return False


def check_the_task_held_nothing(seen) -> None:
    """Only what the files held was set after the task was made, and nothing after build."""
    own = changed(seen["made"], seen["run"])
    assert own <= DATA_READ, f"the task set {sorted(own - DATA_READ)} after it was made"
    assert changed(seen["built"], seen["run"]) == set()


@pytest.mark.slow
def test_nothing_the_data_settles_is_held_by_the_task_training_or_evaluating(
        tmp_path, sample_vocab, monkeypatch):
    monkeypatch.setattr(runner, "on_gpu", lambda: False)
    (tmp_path / "train.tsv").write_text("\n".join(ROWS) + "\n")
    (tmp_path / "dev.tsv").write_text("\n".join(ROWS[:3]) + "\n")
    train, dev = str(tmp_path / "train.tsv"), str(tmp_path / "dev.tsv")

    # A regression run whose flags said nothing of its task: --task would say regression; here
    # the labels are numbers, so --task regression is given as the command gives it.
    trained = spec_of(tmp_path, sample_vocab, "trained", train=train, eval=dev)
    trained = trained.replace(task="regression", options=ClassifierOptions(
        max_seq_length=16, kind="regression"))
    assert runner.run(Watched, trained) == 0
    check_the_task_held_nothing(Watched.seen)
    spec = Watched.seen["spec"]
    assert (spec.task, spec.options.kind, spec.options.num_labels) == ("regression",
                                                                       "regression", 1)

    # An evaluation-only run of that model, its task left to the model: the task is settled
    # into the spec (it was on the task alone, spec.options.kind None), and nothing of the
    # task's own but what it read changes.
    evaluated = spec_of(tmp_path, sample_vocab, "evaluated", eval=dev).replace(
        model=ModelSource(load_from="checkpoint",
                          checkpoint_path=str(tmp_path / "trained" / "checkpoints")))
    assert runner.run(Watched, evaluated) == 0
    check_the_task_held_nothing(Watched.seen)
    spec = Watched.seen["spec"]
    assert (spec.task, spec.options.kind, spec.options.labels, spec.options.num_labels) == \
        ("regression", "regression", None, 1)
    results = json.loads((tmp_path / "evaluated" / "eval_results.json").read_text())
    assert (results["task"], results["labels"]) == ("regression", None)
