"""The flags every runner shares (albert.flags), as the three runners see them."""

import os
import re
import subprocess
import sys

import pytest
from conftest import run_in_process

RUNNERS = ("run_pretraining", "run_squad", "run_classifier")


@pytest.mark.parametrize("runner", RUNNERS + ("answer", "classify"))
def test_help_shows_each_default_once(runner):
    out = subprocess.run([sys.executable, "-m", f"albert.{runner}", "--help"],
                         capture_output=True, text=True, timeout=120,
                         env={**os.environ, "COLUMNS": "200"}).stdout
    assert "usage:" in out
    # One entry per option: from its flags to the next option's.
    entries = re.split(r"\n  (?=-)", out)
    assert len(entries) > 10
    for entry in entries:
        assert "(default: None)" not in entry and "(default: False)" not in entry, entry
        assert len(re.findall(r"\bdefault\b", entry, re.I)) <= 1, entry


def test_plan_only_takes_the_launchers_rank_count_in_every_runner(sample_vocab, tmp_path,
                                                                    monkeypatch):
    # The same batch flags under "horovodrun -np 4" (its environment) plan for 4 ranks in all.
    for name, value in (("HOROVOD_RANK", "0"), ("HOROVOD_SIZE", "4"),
                        ("HOROVOD_LOCAL_RANK", "0")):
        monkeypatch.setenv(name, value)
    common = ["--model_size", "tiny", "--per_gpu_batch_size", "8", "--global_batch_size", "64",
              "--max_seq_length", "64", "--plan_only", "--spm_model", sample_vocab]
    extra = {"run_pretraining": ["--total_steps", "10"],
             "run_squad": ["--train_file", str(tmp_path / "x.json")],
             "run_classifier": ["--train_file", str(tmp_path / "x.tsv")]}
    for runner in RUNNERS:
        code, out, err = run_in_process(runner, common + extra[runner])
        assert code == 0, err[-2000:]
        assert "batch plan: 8 x 2 x 4 = 64" in out, (runner, out)


@pytest.mark.parametrize("runner", RUNNERS)
def test_bad_flag_is_one_line_and_exit_2_without_a_traceback(runner, tmp_path):
    """The one real process per runner for a user's error (the runners' error cases run
    in-process elsewhere): exit status 2, one "error:" line naming the flag, no traceback."""
    argv = {"run_pretraining": ["--total_steps", "10"],
            "run_squad": ["--train_file", str(tmp_path / "x.json"), "--output_dir",
                          str(tmp_path / "o")],
            "run_classifier": ["--train_file", str(tmp_path / "x.tsv"), "--output_dir",
                               str(tmp_path / "o")]}[runner]
    proc = subprocess.run([sys.executable, "-m", f"albert.{runner}", *argv, "--log_frequency",
                           "0", "--checkpoint_dir", str(tmp_path / "k")],
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"})
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert proc.stderr.strip().splitlines() == ["error: --log_frequency must be at least 1, "
                                                "got 0"]


@pytest.mark.parametrize("runner", ["run_squad", "run_classifier"])
def test_evaluation_only_from_pretrained_needs_a_path_in_both_fine_tuners(runner, sample_vocab,
                                                                          tmp_path):
    (tmp_path / "dev").write_text("x")  # never read: the missing model path comes first
    argv = {"run_squad": ["--predict_file", str(tmp_path / "dev")],
            "run_classifier": ["--eval_file", str(tmp_path / "dev")]}[runner]
    proc = subprocess.run([sys.executable, "-m", f"albert.{runner}", *argv, "--spm_model",
                           sample_vocab, "--load_from", "pretrained", "--output_dir",
                           str(tmp_path / "out")], capture_output=True, text=True,
                          timeout=300, env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"})
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert "--load_from pretrained needs --checkpoint_path" in proc.stderr


def test_fine_tuners_read_relative_files_under_the_filesystem_prefix(tmp_path):
    # The SageMaker launcher sets --filesystem_prefix to the FSx channel and passes data files
    # relative to it (as run_pretraining's --train_dir).
    from albert import run_classifier, run_squad

    squad = run_squad.parse_args(["--filesystem_prefix", "/fsx", "--train_file",
                                  "squad/train.json", "--predict_file", "/abs/dev.json"])
    assert (squad.train_file, squad.predict_file) == ("/fsx/squad/train.json", "/abs/dev.json")
    glue = run_classifier.parse_args(["--filesystem_prefix", "/fsx", "--train_file", "sst2/t.tsv",
                                      "--eval_file", "sst2/d.tsv", "--output_dir",
                                      str(tmp_path / "out")])
    assert (glue.train_file, glue.eval_file) == ("/fsx/sst2/t.tsv", "/fsx/sst2/d.tsv")
    assert glue.checkpoint_dir == str(tmp_path / "out" / "checkpoints")
    local = run_squad.parse_args(["--train_file", "squad/train.json"])
    assert local.train_file == "squad/train.json"
