"""run_squad as a user runs it (its main, in this process; horovodrun's ranks in processes):
learning, official scoring, multi-rank prediction, errors."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest
from helpers import run_in_process
from trained_squad import WINDOW, copy_run

from albert.demo.squad_sample import write_sample
from albert.io.pretrained import save_pretrained

HOROVODRUN = os.path.join(os.path.dirname(sys.executable), "horovodrun")


def run_squad(argv, timeout=600, check=True, launcher=()):
    """run_squad in a process of its own: only under horovodrun, whose ranks are processes."""
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"}
    proc = subprocess.run([*launcher, sys.executable, "-m", "albert.run_squad", *argv],
                          capture_output=True, text=True, timeout=timeout, env=env)
    if check:
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc


@pytest.fixture(scope="module")
def dev_file(tmp_path_factory):
    """A small v2.0 dev file, for the refusals (no model needed)."""
    out = tmp_path_factory.mktemp("squad_dev")
    return write_sample(str(out), "v2.0", train_questions=1, dev_questions=12, seed=3)[1]


def squad(argv):
    """run_squad's main(argv) in this process, checked to succeed: (stdout, stderr)."""
    code, out, err = run_in_process("run_squad", argv)
    assert code == 0, out[-3000:] + err[-3000:]
    return out, err


@pytest.mark.slow
def test_tiny_model_learns_planted_answers(squad_fine_tune):
    run = squad_fine_tune
    out = run.dir
    assert "100.00% of answers recoverable" in run.stderr
    result = json.loads((out / "pred" / "eval_results.json").read_text())
    baseline = 100.0 * result["NoAns_total"] / result["total"]  # answering "" everywhere
    print(f"dev F1 {result['f1']:.1f} (all-empty baseline {baseline:.1f})")
    assert result["f1"] > baseline + 15
    assert result["HasAns_f1"] > 30
    # The files the official script reads, and the official numbers from them.
    preds = json.loads((out / "pred" / "predictions.json").read_text())
    odds = json.loads((out / "pred" / "null_odds.json").read_text())
    nbest = json.loads((out / "pred" / "nbest_predictions.json").read_text())
    assert set(preds) == set(odds) == set(nbest) and len(preds) == result["total"]
    code, scored, err = run_in_process("squad_eval", [
        run.dev, out / "pred" / "predictions.json", "--na_prob_file",
        out / "pred" / "null_odds.json"])
    assert code in (0, None), err
    assert json.loads(scored)["f1"] == pytest.approx(result["f1"])
    records = [json.loads(line) for line in open(out / "logs" / "metrics.jsonl")]
    eval_rows = [r for r in records if r["split"] == "eval"]
    assert eval_rows and {"exact", "f1", "HasAns_f1", "NoAns_f1", "best_f1"} <= set(eval_rows[0])
    train_rows = [r for r in records if r["split"] == "train"]
    assert train_rows[-1]["loss"] < train_rows[0]["loss"]
    # The closing summary: the scores against answering every question with no answer,
    # counted here from the dev file (the unanswerable share, v2.0).
    questions = [qa for article in json.loads(open(run.dev).read())["data"]
                 for paragraph in article["paragraphs"] for qa in paragraph["qas"]]
    empty = 100.0 * sum(bool(qa.get("is_impossible")) for qa in questions) / len(questions)
    summary = [line for line in run.stdout.splitlines() if line.startswith("summary: ")]
    assert len(summary) == 1 and summary[0].startswith("summary: squad, "), run.stdout[-2000:]
    assert f"eval exact {result['exact']:.2f} F1 {result['f1']:.2f}" in summary[0]
    assert f"baseline all-empty answers: exact {empty:.2f} F1 {empty:.2f}" in summary[0]


@pytest.mark.slow
def test_padding_to_the_batch_gives_the_predictions_of_padding_to_max(squad_fine_tune,
                                                                       tmp_path):
    """Issue 26: windows batched by length and padded to their bucket predict exactly what
    windows padded to --max_seq_length do."""
    out = squad_fine_tune.dir
    results = {}
    for padding in ("max", "batch"):
        squad(["--predict_file", squad_fine_tune.dev, "--load_from", "checkpoint",
               "--checkpoint_path", str(out / "ckpt"), "--padding", padding,
               "--eval_batch_size", "16", "--cache_dir", str(tmp_path / "cache"),
               "--output_dir", str(tmp_path / padding), "--no_progress", "--xla", "off"])
        results[padding] = {name: json.loads((tmp_path / padding / name).read_text())
                            for name in ("predictions.json", "null_odds.json",
                                         "eval_results.json")}
    assert results["batch"]["predictions.json"] == results["max"]["predictions.json"]
    odds = results["max"]["null_odds.json"]
    assert results["batch"]["null_odds.json"] == pytest.approx(odds, abs=1e-4)
    assert results["batch"]["eval_results.json"]["f1"] == pytest.approx(
        results["max"]["eval_results.json"]["f1"])


@pytest.mark.slow
def test_resumed_bucketed_fine_tune_continues_the_straight_run(sample_vocab, tmp_path):
    """Issue 26: under --padding batch a run resumed from its checkpoint (its input position
    restored) or under another batch split (the stream replayed) ends where the straight run
    ends. The learning rate is constant, so raising --total_steps changes no update."""
    train, dev = write_sample(str(tmp_path / "data"), "v2.0", train_questions=160,
                              dev_questions=24, seed=7)

    def fine_tune(name, steps, *extra):
        squad(["--train_file", train, "--predict_file", dev, "--model_size", "tiny",
               "--config_override", "num_hidden_layers=1", "--spm_model", sample_vocab,
               "--max_seq_length", "128", "--doc_stride", "48", "--max_query_length", "24",
               "--global_batch_size", "8", "--per_gpu_batch_size", "8",
               "--total_steps", str(steps),
               "--warmup_steps", "0", "--learning_rate", "1e-3", "--end_learning_rate",
               "1e-3", "--checkpoint_frequency", "1", "--log_frequency", "1",
               "--output_dir", str(tmp_path / name), "--cache_dir", str(tmp_path / "cache"),
               "--no_progress", "--xla", "off", *extra])
        return json.loads((tmp_path / name / "null_odds.json").read_text())

    straight = fine_tune("straight", 6)
    fine_tune("restored", 3)
    assert fine_tune("restored", 6) == pytest.approx(straight, abs=1e-5)
    fine_tune("replayed", 3)
    # 4 x 2 instead of 8 x 1: no saved position of this split, so the stream is replayed.
    replayed = fine_tune("replayed", 6, "--per_gpu_batch_size", "4")
    assert replayed == pytest.approx(straight, abs=1e-3)


@pytest.mark.horovod
def test_prediction_split_across_two_ranks_matches_one(squad_fine_tune, tmp_path):
    """Two ranks launched by horovodrun, real processes by nature, predict what one does."""
    out = squad_fine_tune.dir
    common = ["--predict_file", squad_fine_tune.dev, "--load_from", "huggingface",
              "--checkpoint_path", str(out / "ckpt" / "final"), *WINDOW, "--cache_dir",
              str(out / "cache"), "--log_dir", str(tmp_path / "logs"), "--no_progress",
              "--eval_batch_size", "32"]
    _, err = squad(common + ["--output_dir", str(tmp_path / "one")])
    assert "using cached features" in err  # the dev features were cached by training
    two = run_squad(common + ["--output_dir", str(tmp_path / "two")],
                    launcher=(HOROVODRUN, "-np", "2", "--gloo", "-H", "localhost:2"))
    assert "SQuAD v2.0" in two.stdout
    p1 = json.loads((tmp_path / "one" / "predictions.json").read_text())
    p2 = json.loads((tmp_path / "two" / "predictions.json").read_text())
    assert p1 == p2 and len(p1) == len(squad_fine_tune.questions)
    original = json.loads((out / "pred" / "predictions.json").read_text())
    assert p1 == original  # the exported model predicts what the trained one did


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--train_file", "/nonexistent/train.json"], "--train_file /nonexistent/train.json "
                                                      "does not exist"),
        (["--train_file", "{bad}"], "is not valid JSON"),
        (["--predict_file", "{dev}", "--spm_model", "", "--load_from", "checkpoint",
          "--checkpoint_path", "{tmp}"], "no vocabulary"),
        (["--predict_file", "{dev}", "--load_from", "huggingface"], "needs --checkpoint_path"),
        (["--predict_file", "{dev}"], "prediction without --train_file needs a fine-tuned model"),
        (["--predict_file", "{dev}", "--load_from", "checkpoint", "--checkpoint_path", "{tmp}",
          "--eval_batch_size", "0"], "--eval_batch_size must be at least 1, got 0"),
        (["--train_file", "{dev}", "--log_frequency", "0"],
         "--log_frequency must be at least 1, got 0"),
    ],
)
def test_clear_errors(argv, message, dev_file, sample_vocab, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{oops")
    argv = [a.replace("{bad}", str(bad)).replace("{dev}", dev_file)
            .replace("{tmp}", str(tmp_path)) for a in argv]
    base = ["--model_size", "tiny", "--spm_model", sample_vocab, "--cache_dir",
            str(tmp_path / "c"), "--output_dir", str(tmp_path / "o"), "--log_dir",
            str(tmp_path / "l"), "--checkpoint_dir", str(tmp_path / "k")]
    code, _, err = run_in_process("run_squad", base + argv)
    assert code == 2 and message in err, err[-2000:]


@pytest.mark.slow
def test_v11_data_is_predicted_and_scored_as_v11(sample_vocab, tmp_path):
    train, dev = write_sample(str(tmp_path / "d"), "v1.1", train_questions=5, dev_questions=12)
    squad(["--train_file", train, "--total_steps", "1", "--per_gpu_batch_size", "2",
           "--predict_file", dev, "--model_size", "tiny", "--spm_model", sample_vocab,
           "--max_seq_length", "128", "--skip_xla", "--output_dir", str(tmp_path / "o"),
           "--cache_dir", str(tmp_path / "c"), "--log_dir", str(tmp_path / "l"),
           "--checkpoint_dir", str(tmp_path / "k"), "--export_dir", str(tmp_path / "s")])
    # --export_dir: a SavedModel with the QA signature and the vocabulary beside it.
    assert (tmp_path / "s" / "saved_model.pb").exists()
    assert (tmp_path / "s" / "assets" / "spiece.model").exists()
    result = json.loads((tmp_path / "o" / "eval_results.json").read_text())
    assert result["version"] == "v1.1"
    assert {"exact_match", "f1", "total"} <= set(result) and result["total"] == 12
    assert not (tmp_path / "o" / "null_odds.json").exists()
    preds = json.loads((tmp_path / "o" / "predictions.json").read_text())
    assert len(preds) == 12 and all(p for p in preds.values())  # v1.1 always answers


def test_loaded_model_too_short_for_max_seq_length(dev_file, sample_vocab, tmp_path):
    from albert import AlbertConfig, AlbertForQuestionAnswering

    config = AlbertConfig.from_preset("tiny", vocab_size=2000, max_position_embeddings=64)
    save_pretrained(AlbertForQuestionAnswering(config).build_for_config(),
        tmp_path / "hf", spm_model=sample_vocab)
    code, _, err = run_in_process("run_squad", [
        "--predict_file", dev_file, "--load_from", "huggingface",
        "--checkpoint_path", str(tmp_path / "hf"), "--max_seq_length", "128",
        "--cache_dir", str(tmp_path / "c"), "--output_dir", str(tmp_path / "o"),
        "--log_dir", str(tmp_path / "l")])
    assert code == 2
    assert "--max_seq_length 128 exceeds the model's max_position_embeddings (64)" in err


@pytest.mark.slow
def test_predict_only_from_the_finished_fine_tune_reproduces_its_scores(squad_fine_tune,
                                                                        tmp_path):
    out = squad_fine_tune.dir
    trained = json.loads((out / "pred" / "eval_results.json").read_text())
    _, err = squad(["--predict_file", squad_fine_tune.dev, "--load_from", "checkpoint",
                    "--checkpoint_path", str(out / "ckpt"), *WINDOW, "--cache_dir",
                    str(tmp_path / "cache"), "--output_dir", str(tmp_path / "pred"),
                    "--log_dir", str(tmp_path / "logs"), "--no_progress", "--xla", "off"])
    assert "predicting with the fine-tuned weights of" in err
    again = json.loads((tmp_path / "pred" / "eval_results.json").read_text())
    assert again == trained  # exactly: the same weights, features and post-processing
    assert trained["f1"] > 100.0 * trained["NoAns_total"] / trained["total"] + 15


def test_predict_only_refuses_a_model_without_a_qa_head(dev_file, sample_vocab, tmp_path):
    from albert import AlbertConfig, AlbertForPreTraining

    config = AlbertConfig.from_preset("tiny", vocab_size=2000)
    save_pretrained(AlbertForPreTraining(config).build_for_config(),
        tmp_path / "pretrained", spm_model=sample_vocab)
    code, _, err = run_in_process("run_squad", [
        "--predict_file", dev_file, "--load_from", "pretrained",
        "--checkpoint_path", str(tmp_path / "pretrained"), "--max_seq_length", "128",
        "--cache_dir", str(tmp_path / "c"), "--output_dir", str(tmp_path / "o"),
        "--log_dir", str(tmp_path / "l")])
    assert code == 2, err[-2000:]
    assert "missing qa_outputs.weight" in err and "Traceback" not in err
    assert not (tmp_path / "o" / "predictions.json").exists()


@pytest.mark.slow
def test_same_command_on_a_finished_fine_tune_says_so_and_predicts(squad_fine_tune, tmp_path):
    run, argv = copy_run(squad_fine_tune, tmp_path)
    argv = [a if a != str(run / "pred") else str(tmp_path / "pred") for a in argv]
    # The fine-tune's run directory, written by this version, resumes unchanged: every entry
    # of its run.json (the spec, the plans, the step, the versions) as it was, but the command
    # line, which is the latest command's (the process's own, as `python -m` gives it).
    record = json.loads((run / "ckpt" / "run.json").read_text())
    out, _ = squad(argv)
    assert "this run already finished" in out
    after = json.loads((run / "ckpt" / "run.json").read_text())
    assert after.pop("command")[-len(argv):] == argv
    assert after == {k: v for k, v in record.items() if k != "command"}
    assert "train step" not in out
    assert (json.loads((tmp_path / "pred" / "eval_results.json").read_text())
            == json.loads((run / "pred" / "eval_results.json").read_text()))


@pytest.mark.slow
def test_training_features_are_cached_shuffled(squad_fine_tune):
    metas = [p for p in (squad_fine_tune.dir / "cache").glob("*.seed42.meta.json")]
    assert len(metas) == 1
    order = [f["example_index"] for f in json.loads(metas[0].read_text())]
    assert sorted(order) != order or len(order) < 2
    ranks = np.argsort(np.argsort(order))
    spearman = np.corrcoef(np.arange(len(order)), ranks)[0, 1]
    assert abs(spearman) < 0.2, spearman  # read order carries no article order


@pytest.mark.slow
def test_eval_frequency_scores_during_training_in_the_logs(sample_vocab, tmp_path):
    # Issue 23: every runner evaluates every --eval_frequency updates, logged like training.
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    train, dev = write_sample(str(tmp_path / "data"), "v2.0", train_questions=160,
                              dev_questions=24, seed=5)
    out, _ = squad(["--train_file", train, "--predict_file", dev, "--model_size", "tiny",
                    "--config_override", "num_hidden_layers=1", "--spm_model", sample_vocab,
                    "--max_seq_length", "96", "--doc_stride", "48", "--max_query_length",
                    "24", "--per_gpu_batch_size", "8", "--total_steps", "6",
                    "--eval_frequency", "2", "--log_frequency", "2",
                    "--output_dir", str(tmp_path / "out"), "--no_progress", "--xla", "off"])
    rows = [json.loads(line) for line in open(tmp_path / "out" / "logs" / "metrics.jsonl")]
    evals = [r for r in rows if r["split"] == "eval"]
    assert [r["step"] for r in evals] == [2, 4, 6]
    assert all("f1" in r and "exact" in r for r in evals)
    final = json.loads((tmp_path / "out" / "eval_results.json").read_text())
    assert evals[-1]["f1"] == pytest.approx(final["f1"])
    events = EventAccumulator(str(tmp_path / "out" / "logs"), size_guidance={"tensors": 0})
    events.Reload()
    assert [e.step for e in events.Tensors("eval/f1")] == [2, 4, 6]
    assert out.count("SQuAD v2.0 on") == 3


def test_overwrite_output_dir_never_discards_a_checkpoint_dir_elsewhere(tmp_path):
    from albert import run_squad
    from albert.cli.flags import FlagError

    with pytest.raises(FlagError, match="lies elsewhere: add --overwrite_checkpoint_dir"):
        run_squad.parse_args(["--train_file", "t.json", "--output_dir", str(tmp_path / "o"),
                              "--checkpoint_dir", str(tmp_path / "shared"),
                              "--overwrite_output_dir"])
    inside = run_squad.parse_args(["--train_file", "t.json", "--output_dir", str(tmp_path / "o"),
                                   "--overwrite_output_dir"])
    assert inside.overwrite_checkpoint_dir
