"""The SQuAD task (albert.tasks.squad): its feature windows from the spec, what its summary shows,
and the all-empty-answers baseline scored by the official rules of each version."""

import pytest

from albert.tasks.squad import SquadTask
from albert.tasks.squad_options import (
    AT_EMPTY,
    BELOW_EMPTY,
    SquadOptions,
    against_empty_answers,
    empty_answer_noise,
)
from albert.train.run_spec import Data, Optimization, Outputs, RunSpec


def task_of(tmp_path, vocab, train=None, **options):
    return SquadTask(RunSpec(
        task="squad", options=SquadOptions(doc_stride=64, **options), vocabulary=vocab,
        data=Data(train=train or str(tmp_path / "train.json")),
        optimization=Optimization(learning_rate=3e-5),  # as build settles it
        outputs=Outputs(output_dir=str(tmp_path / "out"),
                        checkpoint_dir=str(tmp_path / "out" / "checkpoints"),
                        cache_dir=str(tmp_path / "out" / "cache"))))


def data(*answerable):
    """One paragraph with a question per entry: answerable or not (v2.0's is_impossible)."""
    qas = [{"id": f"q{i}", "question": "?", "is_impossible": not a,
            "answers": [{"text": "Paris", "answer_start": 0}] if a else []}
           for i, a in enumerate(answerable)]
    return {"version": "v2.0", "data": [{"title": "t", "paragraphs": [
        {"context": "Paris is in France.", "qas": qas}]}]}


def test_the_windows_are_the_specs(tmp_path, sample_vocab):
    settings = task_of(tmp_path, sample_vocab, max_seq_length=256).settings()
    assert (settings.max_seq_length, settings.doc_stride, settings.max_query_length) == \
        (256, 64, 64)


def test_the_baseline_answers_nothing_and_scores_the_unanswerable_share(tmp_path, sample_vocab):
    task = task_of(tmp_path, sample_vocab)
    task.scored = (None, data(True, False, False, False), None)
    assert task.baseline({"eval": {}}) == "all-empty answers: exact 75.00 F1 75.00"
    assert task.baseline({}) is None
    v1 = data(True, True)
    v1["version"] = "1.1"
    task = task_of(tmp_path, sample_vocab, squad_version="v1.1")
    task.scored = (None, v1, None)
    assert task.baseline({"eval": {}}) == "all-empty answers: exact 0.00 F1 0.00"


def test_the_summary_shows_exact_and_f1_of_either_version(tmp_path, sample_vocab):
    task = task_of(tmp_path, sample_vocab)
    assert task.headline("eval", {"exact": 81.234, "f1": 84.5, "HasAns_f1": 90.0}) == \
        "exact 81.23 F1 84.50"
    assert task.headline("eval", {"exact_match": 80.0, "f1": 88.0}) == "exact 80.00 F1 88.00"


def test_a_fine_tune_at_the_all_empty_score_learned_nothing(tmp_path, sample_vocab):
    # 300 questions, 100 unanswerable: all-empty F1 33.33; two standard errors ~5.8 F1.
    task = task_of(tmp_path, sample_vocab)
    task.scored = (None, data(*([True] * 200 + [False] * 100)), None)
    assert task.learned_nothing({"eval": {"f1": 33.33, "HasAns_f1": 0.0}})
    assert task.learned_nothing({"eval": {"f1": 35.0, "HasAns_f1": 3.0}})
    # Answering some questions right is learning, even where the total stays near the baseline.
    assert not task.learned_nothing({"eval": {"f1": 36.0, "HasAns_f1": 30.0}})
    assert not task.learned_nothing({"eval": {"f1": 52.0, "HasAns_f1": 40.0}})
    assert not task.learned_nothing({})


def test_a_fine_tune_far_below_the_all_empty_answers_is_named_in_the_summary(tmp_path,
                                                                           sample_vocab):
    """Issue 50 item 7: F1 0.80 where answering nothing scores 17.50 (40 questions, 7
    unanswerable; the noise 15.81 F1) is not "the baseline's": the summary says it is worse."""
    from albert.tasks import runner

    task = task_of(tmp_path, sample_vocab)
    task.scored = (None, data(*([True] * 33 + [False] * 7)), None)
    below = {"eval": {"exact": 0.5, "f1": 0.8, "HasAns_f1": 0.97}}
    assert not task.learned_nothing(below)
    flat = runner.summary(task, "done", 30, 60, below, None)
    assert ("baseline all-empty answers: exact 17.50 F1 17.50; WARNING: the model scores below "
            "answering nothing: F1 0.80 against 17.50, more than the noise of 15.81 on 40 "
            "questions: it answers questions it should leave empty, and wrongly. Likely "
            "causes: too few updates") in flat
    assert "learned nothing" not in flat
    # At the all-empty answers it is the learned-nothing warning, and only that one.
    at = runner.summary(task, "done", 30, 60, {"eval": {"exact": 17.5, "f1": 17.5,
                                                        "HasAns_f1": 0.0}}, None)
    assert "WARNING: the model learned nothing" in at and "below answering nothing" not in at
    assert task.baseline({"eval": {"exact": 40.0, "f1": 45.0, "HasAns_f1": 40.0}}) == \
        "all-empty answers: exact 17.50 F1 17.50"


@pytest.mark.parametrize("f1, answerable, standing", [
    (17.5, 0.0, AT_EMPTY), (30.0, 10.0, AT_EMPTY), (5.0, 0.0, AT_EMPTY),
    # Far below: worse than answering nothing, whatever the answerable questions scored.
    (0.8, 0.97, BELOW_EMPTY), (1.0, 20.0, BELOW_EMPTY),
    (30.0, 20.0, None), (60.0, 55.0, None),
])
def test_one_rule_says_where_a_score_stands_against_the_all_empty_answers(f1, answerable,
                                                                          standing):
    # 40 questions, all-empty F1 17.50: the noise is 100 / sqrt(40) = 15.81 F1.
    assert empty_answer_noise(40) == pytest.approx(15.811, abs=1e-3)
    assert against_empty_answers(f1, answerable, 17.5, 40) == standing


def test_setup_returns_the_version_of_the_training_file_once(tmp_path, sample_vocab):
    """Issue 36 item 1: the SQuAD version is one setting in the files' spelling: a training run
    settles it from its training file (unless --squad_version said it), for the runner's fold;
    the file it scores keeps its own version's rules."""
    from albert.data.tokenization import load_tokenizer
    from albert.demo.squad_sample import write_sample
    from albert.train.distributed import Distributed

    for version in ("v2.0", "v1.1"):
        train, _ = write_sample(str(tmp_path / version), version, train_questions=4,
                                dev_questions=1, seed=1)
        task = task_of(tmp_path / version, sample_vocab, train=train)
        before = task.spec
        settled = task.setup(Distributed(), load_tokenizer(sample_vocab))
        assert settled == {"options": SquadOptions(doc_stride=64, squad_version=version)}
        assert task.spec is before and before.options.squad_version is None
        features = before.replace(**settled).options.identity()["features"]
        assert features["squad_version"] == version and features["padding"] == "batch"


def test_the_file_scored_keeps_its_own_version_unless_the_flag_said_one(tmp_path, sample_vocab):
    """Issue 52 point 2: the version a training file settles (squad_version, the run's identity)
    does not decide how the predicted file is read and scored; --squad_version, kept in the
    options as given (version_flag), does. Read from the spec, not from a copy on the task."""
    v2 = data(True, False)
    settled = task_of(tmp_path, sample_vocab, squad_version="v1.1")  # a v1.1 training file's
    assert settled.version_of(v2) == "v2.0"
    flagged = task_of(tmp_path, sample_vocab, squad_version="v1.1", version_flag="v1.1")
    assert flagged.version_of(v2) == "v1.1"
    assert "version_flag" not in vars(flagged) and "given_version" not in vars(flagged)
