"""run_pretraining as a user runs it: real processes, real horovodrun, real signals."""

import json
import os
import signal
import subprocess
import sys

import numpy as np
import pytest
from conftest import PREDS, SEQ
from safetensors.numpy import load_file

HOROVODRUN = os.path.join(os.path.dirname(sys.executable), "horovodrun")


def base_args(records, vocab, out, **overrides):
    args = {
        "--filesystem_prefix": str(records), "--train_dir": "train", "--model_size": "tiny",
        "--spm_model": vocab, "--max_seq_length": str(SEQ),
        "--max_predictions_per_seq": str(PREDS), "--per_gpu_batch_size": "8",
        "--total_steps": "6", "--learning_rate": "0.005", "--log_frequency": "1",
        "--checkpoint_dir": str(out / "ckpt"), "--log_dir": str(out / "logs"),
        "--skip_xla": None, "--no_progress": None,
    }
    args.update(overrides)
    argv = []
    for k, v in args.items():
        if v is False:
            continue
        argv.append(k)
        if v is not None:
            argv.extend(v if isinstance(v, list) else [v])
    return argv


def run_cli(argv, timeout=300, check=True):
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"}
    proc = subprocess.run([sys.executable, "-m", "albert.run_pretraining", *argv],
                          capture_output=True, text=True, timeout=timeout, env=env)
    if check:
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc


def read_jsonl(path):
    return [json.loads(line) for line in open(path, encoding="utf-8")]


def weights(out):
    return load_file(os.path.join(out, "ckpt", "final", "model.safetensors"))


def max_weight_diff(a, b):
    return max(float(np.abs(a[k] - b[k]).max()) for k in a)


def test_learns_and_logs_to_tensorboard(sample_records, sample_vocab, tmp_path):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    argv = base_args(sample_records, sample_vocab, tmp_path, **{
        "--total_steps": "60", "--log_frequency": "10", "--warmup_steps": "5",
        "--val_dir": "validation", "--validation_frequency": "30", "--skip_xla": False,
    })
    proc = run_cli(argv)
    assert "train step 10 loss" in proc.stdout and "seq_per_sec" in proc.stdout
    # --xla auto on a CPU: the update compiled, the gradient decided by the matmul probe.
    assert "update on (auto: CPU float32 matmul" in proc.stdout + proc.stderr
    records = read_jsonl(tmp_path / "logs" / "metrics.jsonl")
    train = [r for r in records if r["split"] == "train"]
    val = [r for r in records if r["split"] == "val"]
    assert [r["step"] for r in train] == [10, 20, 30, 40, 50, 60]
    assert [r["step"] for r in val] == [30, 60]
    assert train[-1]["loss"] < train[0]["loss"] - 0.3
    assert val[-1]["loss"] < val[0]["loss"]
    assert train[-1]["mlm_acc"] > 20 / 2000  # 20x chance over a 2000-piece vocabulary

    events = EventAccumulator(str(tmp_path / "logs"), size_guidance={"tensors": 0})
    events.Reload()
    tags = set(events.Tags()["tensors"])
    for name in ("loss", "mlm_loss", "mlm_acc", "sop_loss", "sop_acc", "learning_rate",
                 "loss_scale", "grad_norm", "weight_norm", "seq_per_sec", "skipped_updates"):
        assert f"train/{name}" in tags, name
    for name in ("loss", "mlm_loss", "mlm_acc", "sop_loss", "sop_acc"):
        assert f"val/{name}" in tags, name
    assert [e.step for e in events.Tensors("train/loss")] == [10, 20, 30, 40, 50, 60]

    # The final export is a Hugging Face model with the vocabulary beside it.
    import transformers

    export = tmp_path / "ckpt" / "final"
    assert (export / "spiece.model").exists()
    transformers.AlbertForPreTraining.from_pretrained(export)
    transformers.AlbertTokenizer.from_pretrained(export)


EQUIV = {"--shuffle_buffer": "0", "--total_steps": "3",
         "--config_override": ["classifier_dropout_prob=0.0"]}


def test_horovod_two_ranks_equals_one_process(sample_records, sample_vocab, tmp_path):
    hvd = tmp_path / "hvd"
    argv = base_args(sample_records, sample_vocab, hvd, **EQUIV, **{"--per_gpu_batch_size": "4"})
    proc = subprocess.run([HOROVODRUN, "-np", "2", "--gloo", "-H", "localhost:2", sys.executable,
                           "-m", "albert.run_pretraining", *argv], capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "2 rank(s) x 4 sequences" in proc.stdout + proc.stderr
    big = tmp_path / "big"
    run_cli(base_args(sample_records, sample_vocab, big, **EQUIV, **{"--per_gpu_batch_size": "8"}))
    acc = tmp_path / "acc"
    run_cli(base_args(sample_records, sample_vocab, acc, **EQUIV, **{
        "--per_gpu_batch_size": "4", "--gradient_accumulation_steps": "2"}))
    # fp32 sums taken in a different order (allreduce vs. in-batch mean) differ by ~1e-7.
    assert max_weight_diff(weights(hvd), weights(big)) < 1e-5
    assert max_weight_diff(weights(acc), weights(big)) < 1e-5
    # ... and training did move the weights.
    init = tmp_path / "init"
    run_cli(base_args(sample_records, sample_vocab, init,
                      **{**EQUIV, "--total_steps": "1", "--learning_rate": "0"}))
    assert max_weight_diff(weights(init), weights(big)) > 1e-3


RESUME = {"--total_steps": "8", "--shuffle_buffer": "300", "--checkpoint_frequency": "4",
          "--config_override": ["hidden_dropout_prob=0.1"]}


def _run_until(argv, marker, sig):
    """Start a run, send `sig` once `marker` appears in its output, return its exit code."""
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"}
    proc = subprocess.Popen([sys.executable, "-m", "albert.run_pretraining", *argv],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    seen = []
    for line in proc.stdout:
        seen.append(line)
        if marker in line:
            proc.send_signal(sig)
            break
    rest, _ = proc.communicate(timeout=300)
    return proc.returncode, "".join(seen) + rest


def test_resume_after_kill9_and_sigterm_continues_the_same_trajectory(sample_records,
                                                                       sample_vocab, tmp_path):
    straight = tmp_path / "straight"
    run_cli(base_args(sample_records, sample_vocab, straight, **RESUME))

    killed = tmp_path / "killed"
    argv = base_args(sample_records, sample_vocab, killed, **RESUME)
    code, out = _run_until(argv, "saved checkpoint", signal.SIGKILL)
    assert code == -signal.SIGKILL, out
    assert not (killed / "ckpt" / "final").exists()
    resumed = run_cli(argv)
    assert "resuming from" in resumed.stderr
    assert max_weight_diff(weights(killed), weights(straight)) < 1e-5

    termed = tmp_path / "termed"
    argv = base_args(sample_records, sample_vocab, termed, **RESUME)
    code, out = _run_until(argv, "train step 2 ", signal.SIGTERM)
    assert code == 0, out
    assert "stopped at step" in out
    run_cli(argv)
    assert max_weight_diff(weights(termed), weights(straight)) < 1e-5


@pytest.mark.parametrize(
    "overrides, message",
    [
        ({"--train_dir": "missing/*.tfrecord"}, "no TFRecord files match"),
        ({"--global_batch_size": "10", "--gradient_accumulation_steps": "3"},
         "--global_batch_size 10 is not divisible"),
        ({"--model_size": "gigantic"}, "--model_size 'gigantic' is unknown"),
        ({"--max_seq_length": "128"}, "--max_seq_length asks for 128"),
        ({"--load_from": "checkpoint"}, "no checkpoint in --checkpoint_dir"),
    ],
)
def test_clear_errors(overrides, message, sample_records, sample_vocab, tmp_path):
    proc = run_cli(base_args(sample_records, sample_vocab, tmp_path, **overrides), check=False)
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert message in proc.stderr
    assert "Traceback" not in proc.stderr


def test_checkpoint_from_a_different_config(sample_records, sample_vocab, tmp_path):
    run_cli(base_args(sample_records, sample_vocab, tmp_path, **{"--total_steps": "1"}))
    proc = run_cli(base_args(sample_records, sample_vocab, tmp_path, **{
        "--total_steps": "2", "--config_override": ["num_hidden_layers=2"]}), check=False)
    assert proc.returncode == 2
    assert "different model config: num_hidden_layers: checkpoint 4 vs this run 2" in proc.stderr


def test_squad_frequency_logs_squad_scores(sample_records, sample_vocab, tmp_path):
    from albert.data.squad_sample import write_sample

    train, dev = write_sample(str(tmp_path / "sq"), train_questions=64, dev_questions=16)
    run_cli(base_args(sample_records, sample_vocab, tmp_path, **{
        "--total_steps": "2", "--squad_frequency": "2", "--squad_train_file": train,
        "--squad_predict_file": dev, "--squad_steps": "4", "--squad_max_seq_length": "128",
        "--squad_batch_size": "8"}))
    rows = [r for r in read_jsonl(tmp_path / "logs" / "metrics.jsonl") if r["split"] == "squad"]
    assert len(rows) == 1 and rows[0]["step"] == 2  # at step 2, not again at the end
    assert rows[0]["total"] == 16 and 0.0 <= rows[0]["f1"] <= 100.0
    assert {"exact", "HasAns_f1", "NoAns_f1", "best_f1"} <= set(rows[0])
