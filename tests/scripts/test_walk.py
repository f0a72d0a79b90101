"""scripts/walk.py, the measure of a command's reach that docs/architecture.md and issue notes
quote: a real run_pretraining stopped at its first update (a process: the script runs the command
in its own interpreter, and ends it there)."""

import os
import re
import subprocess
import sys

import pytest
from helpers import REPO_ROOT


@pytest.mark.slow
def test_the_walk_stops_at_the_first_update_and_counts_what_it_passed(sample_records,
                                                                       sample_vocab, tmp_path):
    proc = subprocess.run(
        [sys.executable, os.path.join(REPO_ROOT, "scripts", "walk.py"), "run_pretraining",
         "--model_size", "tiny", "--spm_model", sample_vocab, "--filesystem_prefix",
         str(sample_records), "--train_dir", "train", "--max_seq_length", "64",
         "--max_predictions_per_seq", "10", "--per_gpu_batch_size", "4", "--total_steps", "3",
         "--xla", "off", "--checkpoint_frequency", "0", "--no_progress",
         "--checkpoint_dir", str(tmp_path / "ckpt"), "--log_dir", str(tmp_path / "logs")],
        capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    counts = re.search(r"^run_pretraining: files (\d+), run-time files (\d+), modules (\d+), "
                       r"frames (\d+)$", proc.stdout, re.M)
    assert counts, proc.stdout
    files, run_time, modules, frames = map(int, counts.groups())
    stack = re.search(r"^frames: (.*)$", proc.stdout, re.M).group(1).split(" <- ")
    assert len(stack) == frames
    assert stack[0] == "train/trainer.py:train_step"
    assert stack[-2:] == ["run_pretraining.py:main", "run_pretraining.py:<module>"]
    assert "cli/flags.py:run_main" in stack and "train/loop.py:fit" in stack
    called = re.search(r"^run-time files: (.*)$", proc.stdout, re.M).group(1).split()
    assert len(called) == run_time <= files <= modules + 1
    assert {"run_pretraining.py", "tasks/runner.py", "train/trainer.py"} <= set(called)
    # Stopped at the first update: nothing trained, nothing saved.
    assert "train step" not in proc.stdout and not (tmp_path / "ckpt" / "final").exists()
