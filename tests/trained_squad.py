"""One SQuAD fine-tune that every test reading a fine-tune's outputs shares (test_run_squad,
test_answer, test_export, scripts/test_cloud): run_squad's own command, in this process, built
once per session. A test that writes into its directories copies them first (copy_run).
tests/conftest.py registers this module (pytest_plugins): the fixture is `squad_fine_tune`,
built once per test process."""

import json
import shutil
from types import SimpleNamespace

import pytest
from helpers import run_in_process

# A stride well below the window's room makes the longer contexts span several windows
# (answer's window handling), and enough updates at this window teach the tiny model the planted
# facts well above answering nothing (test_run_squad's F1 margin); shorter windows learned less.
WINDOW = ["--max_seq_length", "160", "--doc_stride", "64", "--max_query_length", "24"]
TRAIN_QUESTIONS, DEV_QUESTIONS, SEED = 1200, 200, 3

def _build(sample_vocab, tmp_path_factory):
    from albert.demo.squad_sample import write_sample

    out = tmp_path_factory.mktemp("squad_fine_tune")
    train, dev = write_sample(str(out / "data"), "v2.0", train_questions=TRAIN_QUESTIONS,
                              dev_questions=DEV_QUESTIONS, seed=SEED)
    argv = ["--train_file", train, "--predict_file", dev, "--model_size", "tiny",
            "--spm_model", sample_vocab, *WINDOW, "--per_gpu_batch_size", "16",
            "--learning_rate", "5e-4", "--num_train_epochs", "3", "--log_frequency", "25",
            "--eval_batch_size", "16",
            "--output_dir", str(out / "pred"), "--cache_dir", str(out / "cache"),
            "--checkpoint_dir", str(out / "ckpt"), "--log_dir", str(out / "logs"),
            "--export_dir", str(out / "serving" / "1"),
            "--no_progress", "--xla", "off"]  # not auto: its timing probe differs by CPU
    code, stdout, stderr = run_in_process("run_squad", argv)
    assert code == 0, stdout[-3000:] + stderr[-3000:]
    # run_squad's answers at a threshold no null score difference reaches: every question its
    # best span (what albert.answer is compared with), the windows given as the run had them.
    every = ["--predict_file", dev, "--load_from", "checkpoint", "--checkpoint_path",
             str(out / "ckpt"), *WINDOW, "--null_score_diff_threshold", "1e9",
             "--eval_batch_size", "16", "--cache_dir", str(out / "cache"),
             "--output_dir", str(out / "answered"), "--log_dir", str(out / "answered_logs"),
             "--no_progress", "--xla", "off"]
    code, _, err = run_in_process("run_squad", every)
    assert code == 0, err[-3000:]
    lines = []
    for article in json.loads(open(dev, encoding="utf-8").read())["data"]:
        for paragraph in article["paragraphs"]:
            for qa in paragraph["qas"]:
                lines.append({"id": qa["id"], "question": qa["question"],
                              "context": paragraph["context"]})
    with open(out / "questions.jsonl", "w", encoding="utf-8") as f:
        for line in lines:
            f.write(json.dumps(line) + "\n")
    return SimpleNamespace(
        dir=out, train=train, dev=dev, argv=argv, stdout=stdout, stderr=stderr,
        questions=lines, answered=json.loads((out / "answered" / "predictions.json").read_text()),
        null_odds=json.loads((out / "pred" / "null_odds.json").read_text()))


@pytest.fixture(scope="session", name="squad_fine_tune")
def squad_fine_tune_fixture(sample_vocab, tmp_path_factory):
    """The shared fine-tune: .dir holds data/ (train, dev), pred/ (predictions, nbest,
    null_odds, eval_results.json), ckpt/ (checkpoints, run.json, final/), logs/, cache/,
    serving/1 (--export_dir's SavedModel), answered/ (a prediction-only run at
    --null_score_diff_threshold 1e9) and questions.jsonl (the dev questions as answer reads
    them); .argv the command, .stdout/.stderr its lines, .questions the dev questions,
    .answered answered/'s predictions, .null_odds the run's null score differences."""
    # Built once per process, whichever test module's copy of this fixture asks first.
    return _build(sample_vocab, tmp_path_factory)


def copy_run(run, tmp_path):
    """The fine-tune's directory copied under tmp_path, for a test that writes into it, and
    its command with every output moved there (the data files it only reads stay where the
    run's record says they are)."""
    copy = tmp_path / "run"
    shutil.copytree(run.dir, copy, symlinks=True)
    data = str(run.dir / "data")
    argv = [a if a.startswith(data) else a.replace(str(run.dir), str(copy)) for a in run.argv]
    return copy, argv
