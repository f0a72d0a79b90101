"""The classification task (albert.tasks.classification): scoring writes the results and each
example's prediction by label name, a regression's in full precision, GLUE's submission layout,
the majority-class baseline and the headline metric."""

import json
from types import SimpleNamespace

import numpy as np

from albert.tasks.classification import ClassifierTask, score, write_predictions
from albert.tasks.classifier_options import ClassifierOptions
from albert.train.run_spec import Data, Outputs, RunSpec


def task_of(tmp_path, sample_vocab, **options):
    for name in ("train.tsv", "dev.tsv"):
        (tmp_path / name).write_text("x")
    return ClassifierTask(RunSpec(
        task=options.get("kind") or "classification", options=ClassifierOptions(**options),
        vocabulary=sample_vocab,
        data=Data(train=str(tmp_path / "train.tsv"), eval=str(tmp_path / "dev.tsv")),
        outputs=Outputs(output_dir=str(tmp_path / "out"),
                        cache_dir=str(tmp_path / "out" / "cache"))))


def test_score_writes_the_scores_and_every_prediction_by_label_name(tmp_path, sample_vocab,
                                                                    capsys):
    task = task_of(tmp_path, sample_vocab, labels=("no", "yes", "maybe"))
    logits = np.array([[2.0, 0.0, 0.0], [0.0, 3.0, 0.0], [0.0, 0.0, 1.0], [0.0, 1.0, 0.0]])
    scores = score(task, np.array([0, 1, 2, 3]), logits, np.array([0, 1, 1, 1]), step=7)
    assert scores["accuracy"] == 0.75
    out = tmp_path / "out"
    results = json.loads((out / "eval_results.json").read_text())
    assert (results["examples"], results["labels"], results["step"], results["metric"]) == \
        (4, ["no", "yes", "maybe"], 7, "accuracy")
    assert results["accuracy"] == 0.75 and results["eval_file"] == str(tmp_path / "dev.tsv")
    assert (out / "eval_predictions.tsv").read_text().splitlines() == [
        "index\tlabel\tprediction", "0\tno\tno", "1\tyes\tyes", "2\tyes\tmaybe", "3\tyes\tyes"]
    assert f"eval on {tmp_path / 'dev.tsv'} (4 examples): accuracy 0.7500 (" in \
        capsys.readouterr().out


def test_a_regressions_predictions_keep_every_digit(tmp_path, sample_vocab):
    task = task_of(tmp_path, sample_vocab, kind="regression")
    logits = np.array([[0.123456789], [2.5], [4.0]])
    scores = score(task, np.array([0, 1, 2]), logits, np.array([0.1, 2.4, 4.2]), step=1)
    assert scores["pearson"] > 0.99
    rows = (tmp_path / "out" / "eval_predictions.tsv").read_text().splitlines()
    assert rows[1] == "0\t0.1\t0.123456789"
    assert json.loads((tmp_path / "out" / "eval_results.json").read_text())["labels"] is None
    path = write_predictions(str(tmp_path / "test" / "STS-B.tsv"), task, np.array([0, 1]),
                             logits[:2])
    assert open(path).read() == "index\tprediction\n0\t0.123456789\n1\t2.5\n"


def test_glue_submission_layout_names_the_labels(tmp_path, sample_vocab):
    task = task_of(tmp_path, sample_vocab, labels=("entailment", "not_entailment"))
    path = write_predictions(str(tmp_path / "RTE.tsv"), task, np.array([5, 6]),
                             np.array([[0.2, 0.1], [0.0, 0.9]]))
    assert open(path).read() == "index\tprediction\n5\tentailment\n6\tnot_entailment\n"


def test_the_baseline_is_the_training_sets_majority_class_on_the_evaluation(tmp_path,
                                                                           sample_vocab):
    task = task_of(tmp_path, sample_vocab, labels=("no", "yes"))
    task.examples = {"train": [SimpleNamespace(label=x) for x in ("yes", "yes", "no")],
                     "eval": [SimpleNamespace(label=x) for x in ("no", "no", "no", "yes")]}
    assert task.baseline({"eval": {}}) == "majority class (yes): accuracy 0.2500"
    assert task.baseline({}) is None
    del task.examples["train"]  # evaluation only: the evaluation file's own majority
    assert task.baseline({"eval": {}}) == "majority class (no): accuracy 0.7500"
    assert task.headline("eval", {"accuracy": 0.5, "mcc": 0.1}) == "accuracy 0.5000"


def test_a_fine_tune_at_the_majority_class_learned_nothing(tmp_path, sample_vocab):
    task = task_of(tmp_path, sample_vocab, labels=("no", "yes"))
    gold = ["no"] * 300 + ["yes"] * 100  # majority 0.75; two standard errors ~0.043
    task.examples = {"train": [SimpleNamespace(label="no")],
                     "eval": [SimpleNamespace(label=x) for x in gold]}
    assert task.learned_nothing({"eval": {"accuracy": 0.75}})
    assert task.learned_nothing({"eval": {"accuracy": 0.73}})
    assert not task.learned_nothing({"eval": {"accuracy": 0.85}})
    assert not task.learned_nothing({})


def test_setup_returns_the_labels_the_training_file_settles_and_leaves_the_spec(tmp_path,
                                                                               sample_vocab):
    """Issue 36 item 1: the data settles the task and the labels in id order (sorted, when no
    flag gave them); setup returns them for the runner's one fold, and the spec it was built
    with stays as it was."""
    from albert.data.tokenization import load_tokenizer
    from albert.train.distributed import Distributed

    task = task_of(tmp_path, sample_vocab)
    rows = ["sentence\tlabel", "a good film\tpos", "a bad film\tneg", "fine\tpos"]
    (tmp_path / "train.tsv").write_text("\n".join(rows) + "\n")
    (tmp_path / "dev.tsv").write_text("\n".join(rows[:3]) + "\n")
    before = task.spec
    settled = task.setup(Distributed(), load_tokenizer(sample_vocab))
    assert settled == {"task": "classification",
                       "options": ClassifierOptions(kind="classification",
                                                    labels=("neg", "pos"))}
    # The task holds none of it: the labels are the spec's, once the runner folds them.
    assert task.spec is before and task.label_names is None and task.num_labels is None
    assert before.replace(**settled).options.identity()["labels"] == ["neg", "pos"]


def test_the_training_stream_starts_no_autotuning_thread(tmp_path, sample_vocab):
    """Deleting an iterator waits for tf.data's autotuning thread, which can sleep up to a
    minute: a fine-tune stalled that long as its training stream went."""
    from albert.data.tokenization import load_tokenizer
    from albert.train.batch_plan import BatchPlan
    from albert.train.distributed import Distributed

    task = task_of(tmp_path, sample_vocab, max_seq_length=16)
    rows = ["sentence\tlabel", "a good film\tpos", "a bad film\tneg", "fine\tpos"]
    (tmp_path / "train.tsv").write_text("\n".join(rows) + "\n")
    (tmp_path / "dev.tsv").write_text("\n".join(rows[:3]) + "\n")
    task.spec = task.spec.replace(**task.setup(Distributed(), load_tokenizer(sample_vocab)))
    plan = BatchPlan(ranks=1, micro_batch=2, accumulation=1)
    stream = task.training_data(plan, 0, Distributed())
    assert stream.options().autotune.enabled is False
    assert next(iter(stream))["input_ids"].shape[:2] == (1, 2)
