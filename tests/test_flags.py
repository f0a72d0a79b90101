"""The flags every runner shares (albert.flags), as the three runners see them."""

import os
import re
import subprocess
import sys

import pytest

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


def test_plan_only_takes_the_launchers_rank_count_in_every_runner(sample_vocab, tmp_path):
    # The same batch flags under "horovodrun -np 4" (its environment) plan for 4 ranks in all.
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2", "HOROVOD_RANK": "0", "HOROVOD_SIZE": "4",
           "HOROVOD_LOCAL_RANK": "0"}
    common = ["--model_size", "tiny", "--per_gpu_batch_size", "8", "--global_batch_size", "64",
              "--max_seq_length", "64", "--plan_only", "--spm_model", sample_vocab]
    extra = {"run_pretraining": ["--total_steps", "10"],
             "run_squad": ["--train_file", str(tmp_path / "x.json")],
             "run_classifier": ["--train_file", str(tmp_path / "x.tsv")]}
    for runner in RUNNERS:
        proc = subprocess.run([sys.executable, "-m", f"albert.{runner}", *common,
                               *extra[runner]], capture_output=True, text=True, timeout=300,
                              env=env)
        assert proc.returncode == 0, proc.stderr[-2000:]
        assert "batch plan: 8 x 2 x 4 = 64" in proc.stdout, (runner, proc.stdout)


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
