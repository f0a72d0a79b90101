"""Every runner stopped by SIGTERM (a spot interruption, a Kubernetes or SageMaker stop) saves a
checkpoint and exits with the interrupted status, 143 (albert.tasks.runner.INTERRUPTED), not 0,
in one process and under horovodrun; the same command resumes and finishes with 0 (issue 50
item 2). The interrupted runs are real processes sent real signals; a fine-tune's resume runs
in this process."""

import os
import signal
import subprocess
import sys

import pytest
from helpers import base_args, run_in_process

from albert.demo.classification_sample import write_task
from albert.demo.squad_sample import write_sample
from albert.tasks.runner import INTERRUPTED

HOROVODRUN = os.path.join(os.path.dirname(sys.executable), "horovodrun")
TWO_RANKS = (HOROVODRUN, "-np", "2", "--gloo", "-H", "localhost:2")


def run_until(module, argv, marker, launcher=()):
    """`python -m albert.<module> argv` (under `launcher`: each of its ranks), sent SIGTERM once
    `marker` appears in its output: (exit status, output)."""
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"}
    proc = subprocess.Popen([*launcher, sys.executable, "-m", f"albert.{module}", *argv],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
                            start_new_session=True)
    seen = []
    try:
        for line in proc.stdout:
            seen.append(line)
            if marker in line:
                for target in ranks(proc.pid, module) if launcher else [proc]:
                    target.send_signal(signal.SIGTERM)
                break
        rest, _ = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    return proc.returncode, "".join(seen) + rest


def ranks(pid, module):
    """The processes of `python -m albert.<module>` that the launcher `pid` started."""
    import psutil  # horovodrun's own dependency

    found = [p for p in psutil.Process(pid).children(recursive=True)
             if f"albert.{module}" in p.cmdline()]
    assert len(found) == 2, found
    return found


def run(module, argv, launcher=()):
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"}
    return subprocess.run([*launcher, sys.executable, "-m", f"albert.{module}", *argv],
                          capture_output=True, text=True, timeout=600, env=env)


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


# Each rank under a wrapper that records its exit status: horovodrun prints a rank's status only
# until it ends the others itself (SIGSTOP, then SIGKILL) after the first rank to exit non-zero,
# so its own lines cannot say what every rank returned.
RANK_WRAPPER = """
import os, signal, subprocess, sys
rank = subprocess.Popen([sys.executable, "-m", "albert.run_pretraining", *sys.argv[2:]])
signal.signal(signal.SIGTERM, lambda *a: rank.send_signal(signal.SIGTERM))
status = rank.wait()
with open(os.path.join(sys.argv[1], "rank" + os.environ["HOROVOD_RANK"]), "w") as f:
    f.write(str(status))
sys.exit(status if status >= 0 else 128 - status)
"""


@pytest.mark.horovod
def test_under_horovodrun_every_rank_exits_143_and_the_same_command_finishes(
        sample_records, sample_vocab, tmp_path):
    # Every process of the job is sent SIGTERM (a container's or a spot instance's stop): the
    # ranks agree on the update to stop at, rank 0 saves, and each exits 143; horovodrun itself
    # then exits non-zero (1, naming a rank's 143).
    wrapper = tmp_path / "rank.py"
    wrapper.write_text(RANK_WRAPPER)
    statuses = tmp_path / "statuses"
    statuses.mkdir()
    argv = base_args(sample_records, sample_vocab, tmp_path, **{
        "--total_steps": "60", "--per_gpu_batch_size": "4", "--checkpoint_frequency": "50"})
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"}
    proc = subprocess.Popen([*TWO_RANKS, sys.executable, str(wrapper), str(statuses), *argv],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
                            start_new_session=True)
    seen = []
    try:
        for line in proc.stdout:
            seen.append(line)
            if "train step 2 " in line:
                for rank in ranks(proc.pid, "run_pretraining"):
                    rank.send_signal(signal.SIGTERM)
                break
        rest, _ = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    out = "".join(seen) + rest
    assert proc.returncode != 0 and "Exit code: 143" in out, out[-3000:]
    # As a shell or horovodrun reads it: 143 returned, or (the rank horovodrun ends itself once
    # the other has exited, with a SIGTERM after its stop was saved and said) killed by SIGTERM.
    read = {p.name: int(p.read_text()) for p in statuses.iterdir()}
    assert {name: 128 - s if s < 0 else s for name, s in read.items()} == {
        "rank0": 143, "rank1": 143}, (read, out[-3000:])
    assert "stopped at step" in out and "Traceback (most recent call last):\n" not in "".join(
        line for line in out.splitlines(keepends=True) if line.startswith("[")), out[-3000:]
    assert not (tmp_path / "ckpt" / "final").exists()
    resumed = run("run_pretraining", argv, launcher=TWO_RANKS)
    assert resumed.returncode == 0, resumed.stdout[-3000:] + resumed.stderr[-3000:]
    assert (tmp_path / "ckpt" / "final").is_dir()
