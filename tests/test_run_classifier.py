"""run_classifier as a user runs it: learning a task, exact multi-rank scoring, GLUE layouts,
prediction-only runs, resuming, errors."""

import fcntl
import json
import os
import shutil
import subprocess
import sys

import pytest
from helpers import run_in_process

# The session's fine-tunes, shared with the other file that reads them (imported fixtures
# would be one fixture per module, each trained once); a plugin's asserts are rewritten only
# if it is registered before its first import.
from trained_classifier import read_tsv, run_classifier_here, training_argv

HOROVODRUN = os.path.join(os.path.dirname(sys.executable), "horovodrun")
TWO_RANKS = (HOROVODRUN, "-np", "2", "--gloo", "-H", "localhost:2")


def run_classifier(argv, timeout=600, check=True, launcher=()):
    """A real run_classifier process: for horovodrun's ranks."""
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"}
    proc = subprocess.run([*launcher, sys.executable, "-m", "albert.run_classifier", *argv],
                          capture_output=True, text=True, timeout=timeout, env=env)
    if check:
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc


@pytest.mark.e2e
def test_tiny_model_learns_the_topic_task(topic_fine_tune, topic_task):
    run = topic_fine_tune
    _, counts = topic_task
    result = json.loads((run.out / "eval_results.json").read_text())
    baseline = counts["dev_majority"]  # always answering the commonest topic
    print(f"dev accuracy {result['accuracy']:.3f} (majority class {baseline:.3f})")
    assert result["accuracy"] > baseline + 0.15
    assert result["mcc"] > 0.3
    # With no --learning_rate the tiny model takes a small model's rate, not the published 2e-5
    # (at which a tiny model learned nothing: albert.tasks.SMALL_MODEL_LEARNING_RATE).
    assert "learning rate 0.0005: a small model's: hidden size 128 <= 256" in run.stderr
    record = json.loads((run.ckpt / "run.json").read_text())
    assert record["spec"]["learning_rate"] == 5e-4
    assert result["examples"] == counts["dev"] and result["metric"] == "accuracy"
    assert result["labels"] == sorted(result["labels"]) and len(result["labels"]) == 4
    assert f"accuracy {result['accuracy']:.4f}" in run.stdout
    # eval_predictions.tsv holds every dev example once, and its accuracy is the reported one.
    rows = read_tsv(run.out / "eval_predictions.tsv")
    assert [int(r["index"]) for r in rows] == list(range(counts["dev"]))
    hits = sum(r["label"] == r["prediction"] for r in rows)
    assert hits / len(rows) == pytest.approx(result["accuracy"])
    # predictions.tsv: GLUE's submission layout, one known label per test row.
    predicted = read_tsv(run.out / "predictions.tsv")
    assert len(predicted) == counts["test"]
    assert {r["prediction"] for r in predicted} <= set(result["labels"])
    # The log: training loss falls; eval scores in the JSON lines and TensorBoard.
    records = [json.loads(line) for line in open(run.root / "logs" / "metrics.jsonl")]
    train_rows = [r for r in records if r["split"] == "train"]
    assert train_rows[-1]["loss"] < train_rows[0]["loss"]
    eval_rows = [r for r in records if r["split"] == "eval"]
    assert eval_rows[-1]["accuracy"] == pytest.approx(result["accuracy"])
    assert list((run.root / "logs").glob("events.out.tfevents.*"))
    # The final export is a Hugging Face classifier with its label names.
    config = json.loads((run.ckpt / "final" / "config.json").read_text())
    assert list(config["id2label"].values()) == result["labels"]
    # The closing summary: the reported accuracy against the majority class, counted here from
    # the files (the training set's commonest label, as answered for every dev example).
    topic_dir = topic_task[0]
    train_labels = [r["label"] for r in read_tsv(topic_dir / "train.tsv")]
    dev_labels = [r["label"] for r in read_tsv(topic_dir / "dev.tsv")]
    commonest = max(sorted(set(train_labels)), key=train_labels.count)
    majority = sum(label == commonest for label in dev_labels) / len(dev_labels)
    summary = [line for line in run.stdout.splitlines() if line.startswith("summary: ")]
    assert len(summary) == 1, run.stdout[-2000:]
    assert summary[0].startswith("summary: classification, ")
    assert f"eval accuracy {result['accuracy']:.4f}" in summary[0]
    assert f"baseline majority class ({commonest}): accuracy {majority:.4f}" in summary[0]


@pytest.mark.horovod
def test_two_rank_training_learns_as_one_rank(topic_fine_tune, topic_task, sample_vocab,
                                              tmp_path):
    """horovodrun -np 2 with half the per-GPU batch (the same global batch of 32) reaches the
    one-process accuracy: same margin over the baseline, within a few dev examples; its
    evaluation split over the ranks scores exactly as one process. Real processes: horovodrun's
    two ranks, and every rank's exit on a refusal."""
    run = topic_fine_tune
    topic_dir, counts = topic_task
    proc = run_classifier(training_argv(topic_dir, sample_vocab, tmp_path, batch=16),
                          launcher=TWO_RANKS)
    assert "batch plan: 16 x 1 x 2 = 32" in proc.stderr
    one = json.loads((run.out / "eval_results.json").read_text())
    two = json.loads((tmp_path / "out" / "eval_results.json").read_text())
    print(f"dev accuracy: 1 rank {one['accuracy']:.3f}, 2 ranks {two['accuracy']:.3f}")
    assert two["accuracy"] > counts["dev_majority"] + 0.15
    assert abs(two["accuracy"] - one["accuracy"]) < 0.12
    # Its evaluation, split over the two ranks and gathered on rank 0, scores exactly as one
    # process scoring its exported model (labels from its id2label), at another eval batch. Only
    # the loss may differ in the last bits: each rank's batches are padded to other lengths.
    run_classifier_here(["--eval_file", str(topic_dir / "dev.tsv"), "--test_file",
                         str(topic_dir / "test.tsv"), "--load_from", "pretrained",
                         "--checkpoint_path", str(tmp_path / "ckpt" / "final"),
                         "--max_seq_length", "64", "--eval_batch_size", "24",
                         "--cache_dir", str(tmp_path / "c"), "--output_dir",
                         str(tmp_path / "one"), "--log_dir", str(tmp_path / "one_logs"),
                         "--no_progress", "--xla", "off"])
    alone = json.loads((tmp_path / "one" / "eval_results.json").read_text())
    split = dict(two)
    alone.pop("step"), split.pop("step")
    assert split.pop("loss") == pytest.approx(alone.pop("loss"), abs=1e-6)
    assert split == alone  # accuracy, MCC, counts and labels exactly
    for name in ("eval_predictions.tsv", "predictions.tsv"):
        assert (tmp_path / "out" / name).read_text() == (tmp_path / "one" / name).read_text()
    # Resuming it with another learning rate is refused on rank 0, and every rank stops with
    # that one line (the other rank would otherwise wait at the next collective for ever).
    changed = training_argv(topic_dir, sample_vocab, tmp_path, batch=16)
    changed += ["--learning_rate", "1e-3"]
    refused = run_classifier(changed, launcher=TWO_RANKS, check=False, timeout=300)
    assert refused.returncode != 0
    # Said in one line (rank 1 says rank 0's, unless horovodrun stops it first: the mechanism is
    # test_run_spec's test_a_refusal_on_rank_0_stops_every_rank); no traceback through our code
    # (horovodrun adds its own about the ranks' exit status).
    said = [line for line in (refused.stdout + refused.stderr).splitlines()
            if "error: " in line and "learning_rate: recorded 0.0005, now 0.001" in line]
    assert said, refused.stdout[-2000:] + refused.stderr[-2000:]
    assert "albert/" not in "".join(line for line in refused.stderr.splitlines()
                                    if line.strip().startswith("File "))


@pytest.mark.e2e
def test_padding_to_the_batch_longest_changes_no_prediction(topic_fine_tune, topic_task,
                                                            tmp_path):
    run = topic_fine_tune
    topic_dir, _ = topic_task
    shutil.copytree(run.root / "cache", tmp_path / "cache")
    common = ["--eval_file", str(topic_dir / "dev.tsv"), "--load_from", "checkpoint",
              "--checkpoint_path", str(run.ckpt), "--max_seq_length", "64", "--cache_dir",
              str(tmp_path / "cache"), "--log_dir", str(tmp_path / "logs"), "--no_progress",
              "--xla", "off"]
    _, _, err = run_classifier_here(common + ["--padding", "max", "--output_dir",
                                              str(tmp_path / "max")])
    assert "using cached features" in err  # training cached the dev features
    fixed = json.loads((tmp_path / "max" / "eval_results.json").read_text())
    batched = json.loads((run.out / "eval_results.json").read_text())
    assert fixed["accuracy"] == batched["accuracy"]
    assert fixed["loss"] == pytest.approx(batched["loss"], abs=1e-5)
    assert ((tmp_path / "max" / "eval_predictions.tsv").read_text()
            == (run.out / "eval_predictions.tsv").read_text())


@pytest.mark.e2e
def test_predicting_a_file_then_scoring_it_with_one_cache_dir(topic_fine_tune, topic_task,
                                                              tmp_path):
    """Predicting dev.tsv caches its features without labels; scoring dev.tsv afterwards with
    the same --cache_dir must read the labels, not reuse those (it scored accuracy 0.0 against
    label -1), and so match the training run's fresh-cache scores."""
    run = topic_fine_tune
    topic_dir, _ = topic_task
    common = ["--load_from", "checkpoint", "--checkpoint_path", str(run.ckpt),
              "--max_seq_length", "64", "--cache_dir", str(tmp_path / "cache"), "--log_dir",
              str(tmp_path / "logs"), "--no_progress", "--xla", "off"]
    run_classifier_here(common + ["--test_file", str(topic_dir / "dev.tsv"), "--output_dir",
                                  str(tmp_path / "predicted")])
    run_classifier_here(common + ["--eval_file", str(topic_dir / "dev.tsv"), "--output_dir",
                                  str(tmp_path / "scored")])
    scored = json.loads((tmp_path / "scored" / "eval_results.json").read_text())
    fresh = json.loads((run.out / "eval_results.json").read_text())
    assert scored["accuracy"] == fresh["accuracy"] > 0.3
    gold = [r["label"] for r in read_tsv(topic_dir / "dev.tsv")]
    assert [r["label"] for r in read_tsv(tmp_path / "scored" / "eval_predictions.tsv")] == gold
    # ... and the predictions of both runs agree.
    predicted = read_tsv(tmp_path / "predicted" / "predictions.tsv")
    assert ([r["prediction"] for r in predicted]
            == [r["prediction"] for r in read_tsv(tmp_path / "scored" / "eval_predictions.tsv")])


@pytest.mark.e2e
def test_same_command_on_a_finished_fine_tune_says_so_and_evaluates(topic_fine_tune, tmp_path):
    run = topic_fine_tune.copy(tmp_path / "run")
    # The fixture's run directory, written by this version, resumes unchanged: every entry
    # of its run.json (the spec, the plans, the step, the versions) as it was, but the command
    # line, which is the latest command's.
    record = json.loads((run.ckpt / "run.json").read_text())
    (run.out / "eval_results.json").unlink()  # the scores compared below are this run's
    _, out, _ = run_classifier_here(run.argv)
    assert "this run already finished" in out
    after = json.loads((run.ckpt / "run.json").read_text())
    assert after.pop("command")[3:] == run.argv
    assert after == {k: v for k, v in record.items() if k != "command"}
    assert "train step" not in out
    again = json.loads((run.out / "eval_results.json").read_text())
    assert again == json.loads((topic_fine_tune.out / "eval_results.json").read_text())


# -- GLUE layouts end to end ------------------------------------------------------------------


def glue_files(task, directory, pairs):
    """Train/dev/test files in the GLUE task's own layout, written from (a, b, label, score)."""
    def rows(split):
        return [p for i, p in enumerate(pairs) if (i % 4 == 0) == (split == "dev")]

    layouts = {
        # CoLA: no header in train/dev (source, label, original mark, sentence); test has one.
        "cola": (None, lambda i, a, b, y, s: ["gj04", y, "", a], ["index", "sentence"],
                 lambda i, a, b: [i, a]),
        "mrpc": (["Quality", "#1 ID", "#2 ID", "#1 String", "#2 String"],
                 lambda i, a, b, y, s: [y, 100 + i, 200 + i, a, b],
                 ["index", "#1 ID", "#2 ID", "#1 String", "#2 String"],
                 lambda i, a, b: [i, 100 + i, 200 + i, a, b]),
        "stsb": (["index", "genre", "filename", "year", "old_index", "source1", "source2",
                  "sentence1", "sentence2", "score"],
                 lambda i, a, b, y, s: [i, "main", "x", "2012", i, "none", "none", a, b, s],
                 ["index", "genre", "filename", "year", "old_index", "source1", "source2",
                  "sentence1", "sentence2"],
                 lambda i, a, b: [i, "main", "x", "2012", i, "none", "none", a, b]),
    }
    header, row, test_header, test_row = layouts[task]
    for split in ("train", "dev", "test"):
        lines = [test_header] if split == "test" else ([header] if header else [])
        for i, (a, b, y, s) in enumerate(rows("dev" if split == "test" else split)):
            lines.append(test_row(i, a, b) if split == "test" else row(i, a, b, y, s))
        (directory / f"{split}.tsv").write_text(
            "".join("\t".join(str(x) for x in line) + "\n" for line in lines), encoding="utf-8")
    return directory


@pytest.mark.e2e
@pytest.mark.parametrize("task, metrics", [("cola", {"mcc", "accuracy"}),
                                           ("mrpc", {"f1", "accuracy", "mcc"}),
                                           ("stsb", {"pearson", "spearman"})])
def test_glue_presets_run_end_to_end(task, metrics, sample_vocab, tmp_path):
    words = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta"]
    pairs = [(f"the {words[i % 6]} module is here .", f"a {words[(i * 5) % 6]} one .",
              str(i % 2), f"{(i % 6) * 0.8:.3f}") for i in range(48)]
    d = glue_files(task, tmp_path, pairs)
    _, _, err = run_classifier_here([
        "--glue_task", task, "--train_file", str(d / "train.tsv"), "--eval_file",
        str(d / "dev.tsv"), "--test_file", str(d / "test.tsv"), "--model_size", "tiny",
        "--config_override", "num_hidden_layers=1", "--spm_model", sample_vocab,
        "--max_seq_length", "32", "--per_gpu_batch_size", "8", "--total_steps", "3",
        "--output_dir", str(tmp_path / "o"), "--cache_dir", str(tmp_path / "c"),
        "--checkpoint_dir", str(tmp_path / "k"), "--log_dir", str(tmp_path / "l"),
        "--no_progress", "--xla", "off"])
    result = json.loads((tmp_path / "o" / "eval_results.json").read_text())
    assert metrics <= set(result) and result["examples"] == 12
    assert result["metric"] == {"cola": "mcc", "mrpc": "f1", "stsb": "pearson"}[task]
    assert result["task"] == ("regression" if task == "stsb" else "classification")
    predicted = read_tsv(tmp_path / "o" / "predictions.tsv")
    assert [int(r["index"]) for r in predicted] == list(range(12))
    if task == "stsb":
        assert all(float(r["prediction"]) == float(r["prediction"]) for r in predicted)
        assert "regression: one output" in err
        config = json.loads((tmp_path / "k" / "final" / "config.json").read_text())
        assert config["problem_type"] == "regression"
    else:
        assert {r["prediction"] for r in predicted} <= {"0", "1"}


@pytest.mark.e2e
def test_jsonl_pairs_and_regression_without_a_preset(regression_fine_tune, tmp_path):
    run = regression_fine_tune
    result = json.loads((run.out / "eval_results.json").read_text())
    assert {"pearson", "spearman", "loss"} <= set(result) and result["examples"] == 6
    # Regression needs no --task to evaluate later: the model has one output.
    shutil.copytree(run.root / "cache", tmp_path / "c")
    _, _, err = run_classifier_here([
        "--eval_file", str(run.root / "dev.jsonl"), "--text_a", "q", "--text_b", "a",
        "--label", "y", "--load_from", "checkpoint", "--checkpoint_path", str(run.ckpt),
        "--max_seq_length", "32", "--output_dir", str(tmp_path / "o2"), "--cache_dir",
        str(tmp_path / "c"), "--log_dir", str(tmp_path / "l2"), "--xla", "off"])
    assert "regression" in err
    again = json.loads((tmp_path / "o2" / "eval_results.json").read_text())
    again.pop("step"), result.pop("step")
    assert again == result  # the same weights, features and scoring


@pytest.mark.e2e
def test_regression_predictions_are_written_in_full_precision(regression_fine_tune):
    """Scores computed from eval_predictions.tsv are the reported ones, to the last bit (with 6
    digits, Spearman from the file was 0.8437 where 0.8440 was printed), and predictions.tsv
    holds the same values."""
    from albert.eval.classification_scoring import regression_scores

    run = regression_fine_tune
    result = json.loads((run.out / "eval_results.json").read_text())
    rows = read_tsv(run.out / "eval_predictions.tsv")
    from_file = regression_scores([float(r["prediction"]) for r in rows],
                                  [float(r["label"]) for r in rows])
    assert len({r["prediction"] for r in rows}) == len(rows)
    assert from_file["spearman"] == result["spearman"]
    assert from_file["pearson"] == result["pearson"]
    assert from_file["loss"] == result["loss"]
    assert f"spearman {from_file['spearman']:.4f}" in run.stdout
    predicted = read_tsv(run.out / "predictions.tsv")
    assert [r["prediction"] for r in predicted] == [r["prediction"] for r in rows]


# -- errors -----------------------------------------------------------------------------------


@pytest.mark.parametrize("files, argv, message", [
    ({"train.tsv": "sentence\tlabel\na\tx\n"}, ["--text_a", "text"],
     "train.tsv has no column 'text' (--text_a); its columns are: 'sentence', 'label'"),
    ({"train.tsv": "sentence\tlabel\na\tx\nb\ty\n", "dev.tsv": "sentence\tlabel\nc\tx\nd\tz\n"},
     [], "dev.tsv line 3: label 'z' is not one of the 2 labels ('x', 'y')"),
    ({"train.tsv": ""}, [], "train.tsv is empty"),
    ({"train.tsv": "sentence\tlabel\na\tx\nb\ty\tz\n"}, [],
     "train.tsv line 3: 3 fields where the header has 2"),
    ({"train.tsv": "sentence\tlabel\na\tx\n"}, ["--labels", "x,y", "--task", "regression"],
     "--labels is for classification"),
    ({"train.tsv": "a\t0\n"}, ["--no_header", "--text_a", "sentence"],
     "--text_a must be a column position (0, 1, ...) with --no_header, got 'sentence'"),
    ({"train.tsv": "sentence\tlabel\na\tx\nb\tx\n"}, [], "has a single label ('x')"),
    ({"dev.tsv": "sentence\tlabel\na\tx\n"}, [],
     "evaluation or prediction without --train_file needs a fine-tuned model"),
    ({"train.tsv": "sentence\tlabel\na\tx\nb\ty\n"}, ["--glue_task", "stsb", "--task",
                                                       "classification"],
     "--task classification contradicts --glue_task stsb (regression)"),
    ({"train.tsv": "sentence\tlabel\na\tx\nb\ty\n"}, ["--pad_to_multiple_of", "0"],
     "--pad_to_multiple_of must be at least 1, got 0"),
    ({"train.tsv": "sentence\tlabel\na\tx\nb\ty\n"}, ["--per_gpu_batch_size", "8"],
     "gives 2 examples: too few for 1 rank(s) x --per_gpu_batch_size 8"),
])
def test_clear_errors(files, argv, message, sample_vocab, tmp_path):
    expect_error(files, argv, message, sample_vocab, tmp_path)


def expect_error(files, argv, message, sample_vocab, tmp_path):
    """run_classifier on `files` (train.tsv/dev.tsv: --train_file/--eval_file) fails with one
    'error:' line holding `message`, exit 2, no traceback."""
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    flags = []
    for name, flag in (("train.tsv", "--train_file"), ("dev.tsv", "--eval_file")):
        if name in files:
            flags += [flag, str(tmp_path / name)]
    base = ["--model_size", "tiny", "--spm_model", sample_vocab, "--cache_dir",
            str(tmp_path / "c"), "--output_dir", str(tmp_path / "o"), "--log_dir",
            str(tmp_path / "l"), "--checkpoint_dir", str(tmp_path / "k"), "--xla", "off"]
    code, _, err = run_in_process("run_classifier", base + flags + argv)
    assert code == 2, err[-2000:]
    errors = [line for line in err.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1 and message in errors[0], err[-2000:]
    return errors[0]


# A file with a header read with --no_header: the header row would be a training example and its
# label a class ("3 labels (0, 1, label)").
@pytest.mark.parametrize("files, message", [
    ({"train.tsv": "label\tsentence\n0\tfirst one\n1\tsecond one\n0\tthird one\n"},
     "train.tsv line 1 looks like a header, but --no_header reads it as an example: its label "
     "'label' appears only there and is a column name. Drop --no_header and name the columns "
     "(--text_a sentence --label label)"),
    ({"train.tsv": "0\tfirst one\n1\tsecond one\n",
      "dev.tsv": "verdict\tsentence\n1\tthird one\n0\tfourth one\n"},
     "dev.tsv line 1 looks like a header, but --no_header reads it as an example: its label "
     "'verdict' appears only there and is the one label that is not a number. Drop "
     "--no_header"),
], ids=["column-name-label", "word-among-numbers"])
def test_no_header_on_a_file_with_a_header_is_refused(files, message, sample_vocab, tmp_path):
    expect_error(files, ["--no_header", "--text_a", "1", "--label", "0"], message, sample_vocab,
                 tmp_path)
    assert not any((tmp_path / d).exists() for d in ("c", "o", "k", "l"))  # nothing written


def test_header_naming_a_column_twice_is_refused(sample_vocab, tmp_path):
    expect_error({"train.tsv": "sentence\tlabel\tsentence\na\tx\tb\nc\ty\td\n"}, [],
                 "train.tsv: its header names column 'sentence' twice (positions 0 and 2, from "
                 "0); rename one", sample_vocab, tmp_path)


def test_quoted_newline_in_a_tsv_is_named_as_such(sample_vocab, tmp_path):
    error = expect_error({"train.tsv": 'sentence\tlabel\n"a text over\ntwo lines"\tx\nb\ty\n'},
                         [], "train.tsv line 2: 1 fields where the header has 2 (a line break "
                         "inside a quoted text? In a .tsv quotes are plain text", sample_vocab,
                         tmp_path)
    assert "save the file as .csv" in error and "a tab inside a text" not in error


def _small_run(topic_dir, vocab, out):
    return ["--train_file", str(topic_dir / "train.tsv"), "--model_size", "tiny",
            "--spm_model", vocab, "--max_seq_length", "32", "--per_gpu_batch_size", "8",
            "--total_steps", "2", "--output_dir", str(out), "--no_progress", "--xla", "off"]


def _one_error(code, err):
    assert code == 2, err[-2000:]
    errors = [line for line in err.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1 and "Traceback" not in err, err[-2000:]
    return errors[0]


@pytest.mark.parametrize("record, wrong", [
    ([], "it holds a list, expected an object"),
    ({"spec": "lr=1e-3", "started_from": {"load_from": "scratch"}},
     "its 'spec' is a string, expected an object"),
    ({"started_from": "scratch"}, "its 'started_from' is a string, expected an object"),
    ({"xla": "off"}, "its 'xla' is a string, expected an object"),
    ({"best": {"metric": "accuracy", "value": "0.9", "step": 2}}, "its best is "),
], ids=["list", "spec-string", "started-from-string", "xla-string", "best-value-string"])
def test_a_run_record_of_the_wrong_shape_is_one_line_before_any_work(record, wrong, topic_task,
                                                                      sample_vocab, tmp_path):
    """Issue 34 item 8: one line naming run.json, exit 2, before featurizing or training (a
    non-numeric best score used to crash after the training, losing the export and summary)."""
    out = tmp_path / "out"
    (out / "checkpoints").mkdir(parents=True)
    (out / "checkpoints" / "run.json").write_text(json.dumps(record))
    error = _one_error(*run_in_process("run_classifier", _small_run(topic_task[0], sample_vocab,
                                                                    out))[::2])
    assert f"{out / 'checkpoints' / 'run.json'} is not a run record: {wrong}" in error, error
    assert "--overwrite_checkpoint_dir" in error
    assert sorted(os.listdir(out)) == ["checkpoints"]  # no cache, no logs: nothing ran


def test_a_second_run_on_an_output_dir_in_use_is_refused_before_featurizing(topic_task,
                                                                          sample_vocab, tmp_path):
    """Issue 34 item 10: two runs started at once on one fresh --output_dir: the run directory's
    lock is taken before the feature cache is written, so the loser says the directory is in
    use and by whom, not a missing `.tfrecord.tmp` the winner renamed away."""
    out = tmp_path / "out"
    (out / "checkpoints").mkdir(parents=True)
    # Another open file description conflicts with flock as another process would.
    holder = os.open(out / "checkpoints" / ".lock", os.O_RDWR | os.O_CREAT)
    os.write(holder, b"pid 4242 on host elsewhere, since 2026-01-01 00:00:00\n")
    fcntl.flock(holder, fcntl.LOCK_EX | fcntl.LOCK_NB)
    try:
        code, _, err = run_in_process("run_classifier", _small_run(topic_task[0], sample_vocab,
                                                                   out))
    finally:
        os.close(holder)
    error = _one_error(code, err)
    assert (f"--checkpoint_dir {out / 'checkpoints'} is in use by another run (pid 4242 on "
            "host elsewhere") in error, error
    assert sorted(os.listdir(out)) == ["checkpoints"]  # the winner's cache is not touched


def test_feature_cache_temporaries_are_named_per_process(tmp_path):
    """Issue 34 item 10: two writers of one cache entry (runs sharing --cache_dir) never write
    into, or rename away, each other's temporary file."""
    from albert.data import classification_records, squad_records

    writers = {"classifier": lambda prefix: classification_records.write_feature_cache(
                   [], {"examples": 0}, prefix, regression=False),
               "squad": lambda prefix: squad_records.write_feature_cache([], prefix)}
    for name, write in writers.items():
        prefix = str(tmp_path / name)
        # In flight: the fixed names every writer used to share, and another writer's own.
        others = [f"{prefix}{part}" for part in (".tfrecord.tmp", ".meta.json.tmp",
                                                 ".tfrecord.4242.tmp", ".meta.json.4242.tmp")]
        for path in others:
            os.mkdir(path)
        write(prefix)
        assert os.path.isfile(prefix + ".tfrecord") and os.path.isfile(prefix + ".meta.json")
        assert sorted(p for p in os.listdir(tmp_path) if p.startswith(name + ".")
                      and p.endswith(".tmp")) == sorted(map(os.path.basename, others))


@pytest.mark.e2e
def test_eval_only_refuses_a_model_without_a_classifier(sample_vocab, tmp_path):
    from albert import AlbertConfig, AlbertForPreTraining
    from albert.io.pretrained import save_pretrained

    config = AlbertConfig.from_preset("tiny", vocab_size=2000, num_hidden_layers=1)
    save_pretrained(AlbertForPreTraining(config).build_for_config(),
        tmp_path / "pretrained", spm_model=sample_vocab)
    (tmp_path / "dev.tsv").write_text("sentence\tlabel\na b\tx\n")
    code, _, err = run_classifier_here([
        "--eval_file", str(tmp_path / "dev.tsv"), "--labels", "x,y", "--load_from",
        "pretrained", "--checkpoint_path", str(tmp_path / "pretrained"), "--output_dir",
        str(tmp_path / "o"), "--log_dir", str(tmp_path / "l"), "--cache_dir",
        str(tmp_path / "c")], check=False)
    error = _one_error(code, err)
    assert "classifier" in error
    assert not (tmp_path / "o" / "eval_results.json").exists()


@pytest.mark.e2e
def test_auto_micro_batch_is_chosen_once_and_kept_on_resume(sample_vocab, tmp_path):
    # A fine-tuner resolves --per_gpu_batch_size auto like run_pretraining, and a resumed run
    # keeps what its run.json recorded even when the budget would now choose otherwise.
    rows = [{"s": f"sentence number {i} .", "y": str(i % 2)} for i in range(32)]
    (tmp_path / "train.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))

    def argv(steps, budget):
        return ["--train_file", str(tmp_path / "train.jsonl"), "--text_a", "s", "--label", "y",
                "--model_size", "tiny", "--config_override", "num_hidden_layers=1",
                "--spm_model", sample_vocab, "--max_seq_length", "32",
                "--per_gpu_batch_size", "auto", "--global_batch_size", "8",
                "--memory_budget_gb", budget, "--total_steps", str(steps),
                "--output_dir", str(tmp_path / "o"), "--cache_dir", str(tmp_path / "c"),
                "--checkpoint_dir", str(tmp_path / "k"), "--log_dir", str(tmp_path / "l"),
                "--no_progress", "--xla", "off"]

    _, _, first = run_classifier_here(argv(2, "100"))
    assert "--per_gpu_batch_size auto: micro-batch 8 x accumulation 1" in first
    record = json.loads((tmp_path / "k" / "run.json").read_text())
    assert record["batch_plan"]["micro_batch"] == 8
    # A budget under which auto would now choose 2 x 4: between the plans of 2 x 4 and 8 x 1.
    from albert.model.config import AlbertConfig
    from albert.train.memory_plan import GIB, SAFETY_MARGIN, memory_plan

    config = AlbertConfig.from_preset("tiny", num_hidden_layers=1, vocab_size=2000)
    plan = lambda micro: memory_plan(config, 32, micro, accumulation=8 // micro,  # noqa: E731
                                     head="classification", device="cpu").total
    assert plan(2) < plan(8) < plan(4)
    budget = (plan(2) + plan(8)) / 2 / (1 - SAFETY_MARGIN) / GIB
    log = "".join(run_classifier_here(argv(4, f"{budget:.9f}"))[1:])
    assert ("--per_gpu_batch_size auto: micro-batch 8 x accumulation 1 x 1 rank(s) = 8, kept "
            "from the run this command resumes") in log
    # ... and says that this budget would not choose it, and how to choose again.
    warning = f"exceeds 90% of --memory_budget_gb {float(f'{budget:.9f}'):g}: to choose again"
    assert warning in log, [line for line in log.splitlines() if "kept from" in line]
    # The fine-tuner continues the input stream from the position saved with step 2.
    assert "rank 0: input position of step 2 restored" in log
    assert json.loads((tmp_path / "k" / "run.json").read_text())["batch_plan"]["micro_batch"] == 8


@pytest.mark.e2e
def test_eval_frequency_scores_during_training_in_the_logs(topic_task, sample_vocab, tmp_path):
    # Issue 23: every runner evaluates every --eval_frequency updates, logged like training.
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    topic_dir, _ = topic_task
    run_classifier_here(["--train_file", str(topic_dir / "train.tsv"), "--eval_file",
                         str(topic_dir / "dev.tsv"), "--model_size", "tiny", "--config_override",
                         "num_hidden_layers=1", "--spm_model", sample_vocab, "--max_seq_length",
                         "32", "--per_gpu_batch_size", "8", "--total_steps", "6",
                         "--eval_frequency", "3", "--log_frequency", "3", "--output_dir",
                         str(tmp_path / "out"), "--no_progress", "--xla", "off"])
    rows = [json.loads(line) for line in open(tmp_path / "out" / "logs" / "metrics.jsonl")]
    evals = [r for r in rows if r["split"] == "eval"]
    assert [r["step"] for r in evals] == [3, 6]
    final = json.loads((tmp_path / "out" / "eval_results.json").read_text())
    assert evals[-1]["accuracy"] == pytest.approx(final["accuracy"]) and final["step"] == 6
    events = EventAccumulator(str(tmp_path / "out" / "logs"), size_guidance={"tensors": 0})
    events.Reload()
    assert [e.step for e in events.Tensors("eval/accuracy")] == [3, 6]
