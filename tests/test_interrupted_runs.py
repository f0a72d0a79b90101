"""Every runner stopped by SIGTERM (a spot interruption, a Kubernetes or SageMaker stop) saves a
checkpoint and exits with the interrupted status, 143 (albert.tasks.runner.INTERRUPTED), not 0;
the same command resumes and finishes with 0 (issue 50 item 2). The fine-tuners' cases are here;
run_pretraining's, in one process and under horovodrun, are in test_run_pretraining. The
interrupted runs are real processes sent real signals; a fine-tune's resume runs in this
process."""

import signal
import sys

import pytest
from helpers import run_in_process, signalled_at

from albert.demo.classification_sample import write_task
from albert.demo.squad_sample import write_sample
from albert.tasks.runner import INTERRUPTED


def run_until(module, argv, marker):
    """`python -m albert.<module> argv`, sent SIGTERM once `marker` appears in its output:
    (exit status, output)."""
    return signalled_at([sys.executable, "-m", f"albert.{module}", *argv], marker,
                        lambda proc: proc.send_signal(signal.SIGTERM))


def fine_tune_argv(module, tmp_path, vocab):
    """A tiny fine-tune of 40 updates, logging each, checkpointing every 5."""
    if module == "run_squad":
        train, dev = write_sample(str(tmp_path / "data"), "v2.0", train_questions=120,
                                  dev_questions=16, seed=5)
        data = ["--train_file", train, "--predict_file", dev, "--max_seq_length", "128",
                "--doc_stride", "48", "--max_query_length", "24"]
    else:
        write_task(str(tmp_path / "data"), "topic", seed=0)
        data = ["--train_file", str(tmp_path / "data" / "train.tsv"), "--eval_file",
                str(tmp_path / "data" / "dev.tsv"), "--max_seq_length", "64"]
    return [*data, "--model_size", "tiny", "--config_override", "num_hidden_layers=1",
            "--spm_model", vocab, "--per_gpu_batch_size", "8", "--total_steps", "40",
            "--learning_rate", "1e-3", "--checkpoint_frequency", "5", "--log_frequency", "1",
            "--output_dir", str(tmp_path / "out"), "--no_progress", "--xla", "off"]


@pytest.mark.e2e
@pytest.mark.parametrize("module", ["run_squad", "run_classifier"])
def test_a_fine_tune_stopped_by_sigterm_exits_143_and_the_same_command_finishes(
        module, sample_vocab, tmp_path):
    argv = fine_tune_argv(module, tmp_path, sample_vocab)
    code, out = run_until(module, argv, "train step 2 ")
    assert code == INTERRUPTED == 143, out[-3000:]
    assert "stopped at step" in out and "(exit status 143: interrupted)" in out, out[-3000:]
    assert "summary: " not in out
    assert not (tmp_path / "out" / "checkpoints" / "final").exists()
    # The same command resumes (in this process: what is read is its lines and status).
    code, stdout, stderr = run_in_process(module, argv)
    assert code == 0, stdout[-3000:] + stderr[-3000:]
    assert "resuming from" in stderr and "summary: " in stdout
