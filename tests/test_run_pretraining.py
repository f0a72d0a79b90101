"""run_pretraining end to end. Its refusals, its plans and the runs whose lines and files a test
reads run as main(argv) in this process (helpers.run_in_process), without an interpreter and
TensorFlow start each; a real process stays where the process is what is tested: a kill -9 or a
SIGTERM and the exit status it leaves, horovodrun's ranks, a lock held by another process."""

import json
import os
import re
import signal
import subprocess
import sys

import numpy as np
import pytest
from helpers import PREDS, SEQ, base_args, run_in_process, signalled_at
from safetensors.numpy import load_file

HOROVODRUN = os.path.join(os.path.dirname(sys.executable), "horovodrun")


def read_jsonl(path):
    return [json.loads(line) for line in open(path, encoding="utf-8")]


def weights(out):
    return load_file(os.path.join(out, "ckpt", "final", "model.safetensors"))


def max_weight_diff(a, b):
    return max(float(np.abs(a[k] - b[k]).max()) for k in a)


def pretrain(argv):
    """run_pretraining's main(argv) in this process: (exit status, stdout, stderr with the log
    lines)."""
    return run_in_process("run_pretraining", argv)


def trained(argv):
    """pretrain(argv), which must finish with status 0: (stdout, stderr)."""
    code, out, err = pretrain(argv)
    assert code == 0, out[-3000:] + err[-3000:]
    return out, err


def release_lock(checkpoint_dir):
    """Let go of the lock a run in this process holds on `checkpoint_dir` for the rest of the
    process (albert.train.run_dir), as a process's exit does, so that a later process may run
    on that directory."""
    from albert.train import run_dir

    os.close(run_dir._held_locks.pop(os.path.realpath(checkpoint_dir)))


# One short run that several tests read: micro-batch 4 x accumulation 2, every update logged.
PLANNED = {"--per_gpu_batch_size": "4", "--global_batch_size": "8", "--total_steps": "3"}


@pytest.fixture(scope="module")
def planned_run(sample_records, sample_vocab, tmp_path_factory):
    """(its output directory, its stdout, its stderr): the batch plan line, the run record, the
    per-update metrics and the checkpoint of a finished PLANNED run."""
    out = tmp_path_factory.mktemp("planned")
    stdout, stderr = trained(base_args(sample_records, sample_vocab, out, **PLANNED))
    return out, stdout, stderr


@pytest.mark.slow
def test_learns_and_logs_to_tensorboard(sample_records, sample_vocab, tmp_path):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    # --eval_frequency: the fine-tuners' name for --validation_frequency (aws-samples').
    argv = base_args(sample_records, sample_vocab, tmp_path, **{
        "--total_steps": "60", "--log_frequency": "10", "--warmup_steps": "5",
        "--val_dir": "validation", "--eval_frequency": "30", "--skip_xla": False,
        "--learning_rate": "0.01",
    })
    stdout, stderr = trained(argv)
    assert "train step 10 loss" in stdout and "seq_per_sec" in stdout
    # --xla auto on a CPU: the update compiled, the gradient decided by the matmul probe.
    assert "update on (auto: CPU float32 matmul" in stdout + stderr
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

    # The closing summary: the final validation against always guessing the most frequent
    # masked token of the validation set, counted here from its records.
    import collections

    import tensorflow as tf

    from albert.data.reader import pretraining_feature_spec

    feature_spec = pretraining_feature_spec(SEQ, PREDS)
    counts = collections.Counter()
    for raw in tf.data.TFRecordDataset(sorted(map(str, (sample_records / "validation")
                                                  .glob("*.tfrecord")))):
        example = tf.io.parse_single_example(raw, feature_spec)
        ids, mask = example["masked_lm_ids"].numpy(), example["masked_lm_weights"].numpy()
        counts.update(int(i) for i in ids[mask > 0])
    unigram = counts.most_common(1)[0][1] / sum(counts.values())
    summary = [line for line in stdout.splitlines() if line.startswith("summary: ")]
    assert len(summary) == 1 and summary[0].startswith("summary: pretraining, 60 updates, ")
    assert (f"val MLM accuracy {val[-1]['mlm_acc']:.4f} SOP accuracy {val[-1]['sop_acc']:.4f}"
            in summary[0])
    assert f"baseline unigram MLM accuracy {unigram:.4f} " in summary[0], summary[0]

    # The final export is a Hugging Face model with the vocabulary beside it.
    import transformers

    export = tmp_path / "ckpt" / "final"
    assert (export / "spiece.model").exists()
    transformers.AlbertForPreTraining.from_pretrained(export)
    transformers.AlbertTokenizer.from_pretrained(export)


EQUIV = {"--shuffle_buffer": "0", "--total_steps": "3",
         "--config_override": ["classifier_dropout_prob=0.0"]}


@pytest.mark.horovod
def test_horovod_two_ranks_equals_one_process(sample_records, sample_vocab, tmp_path):
    """Two ranks under horovodrun (a process each); the one-rank references train in this
    process, whose weights equal those of a process bit for bit."""
    # The ranks' gradient under XLA with --recompute layers (the allreduce sits between the
    # recomputed gradient and the update, outside the compiled functions); the references run
    # neither, so the weights are equal only if both keep the computation the same.
    hvd = tmp_path / "hvd"
    argv = base_args(sample_records, sample_vocab, hvd, **EQUIV, **{
        "--per_gpu_batch_size": "4", "--recompute": "layers", "--skip_xla": False,
        "--xla": "on"})
    proc = subprocess.run([HOROVODRUN, "-np", "2", "--gloo", "-H", "localhost:2", sys.executable,
                           "-m", "albert.run_pretraining", *argv], capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    log = proc.stdout + proc.stderr
    assert "batch plan: 4 x 1 x 2 = 8" in log and "recompute layers" in log
    assert "XLA gradient on, update on" in log, log[-3000:]
    big = tmp_path / "big"
    trained(base_args(sample_records, sample_vocab, big, **EQUIV, **{"--per_gpu_batch_size": "8"}))
    acc = tmp_path / "acc"
    trained(base_args(sample_records, sample_vocab, acc, **EQUIV, **{
        "--per_gpu_batch_size": "4", "--gradient_accumulation_steps": "2"}))
    # fp32 sums taken in a different order (allreduce vs. in-batch mean) differ by ~1e-7.
    assert max_weight_diff(weights(hvd), weights(big)) < 1e-5
    assert max_weight_diff(weights(acc), weights(big)) < 1e-5
    # ... and training did move the weights.
    init = tmp_path / "init"
    trained(base_args(sample_records, sample_vocab, init,
                      **{**EQUIV, "--total_steps": "1", "--learning_rate": "0"}))
    assert max_weight_diff(weights(init), weights(big)) > 1e-3


RESUME = {"--total_steps": "8", "--shuffle_buffer": "300", "--checkpoint_frequency": "4",
          "--config_override": ["hidden_dropout_prob=0.1"]}


def _run_until(argv, marker, sig, launcher=()):
    """Start a run, send `sig` once `marker` appears in its output: (exit status, output).
    Under a launcher a SIGKILL goes to every process of the job at once, as on a lost
    machine."""
    def send(proc):
        proc.send_signal(sig)
        if launcher and sig == signal.SIGKILL:
            os.killpg(proc.pid, signal.SIGKILL)

    return signalled_at([*launcher, sys.executable, "-m", "albert.run_pretraining", *argv],
                        marker, send)


@pytest.mark.e2e
def test_resume_after_kill9_and_sigterm_continues_the_same_trajectory(sample_records,
                                                                       sample_vocab, tmp_path):
    """The interrupted runs are processes: kill -9 and SIGTERM end a process, and 143 is the exit
    status a SIGTERM leaves. The straight reference and the resumed runs train in this process,
    whose weights equal those of a process bit for bit."""
    straight = tmp_path / "straight"
    trained(base_args(sample_records, sample_vocab, straight, **RESUME))

    killed = tmp_path / "killed"
    argv = base_args(sample_records, sample_vocab, killed, **RESUME)
    code, out = _run_until(argv, "saved checkpoint", signal.SIGKILL)
    assert code == -signal.SIGKILL, out
    assert not (killed / "ckpt" / "final").exists()
    _, resumed = trained(argv)
    assert "resuming from" in resumed
    # The input stream continues from the saved iterator state, not by replaying it.
    assert "input position of step 4 restored" in resumed
    assert max_weight_diff(weights(killed), weights(straight)) < 1e-5

    termed = tmp_path / "termed"
    argv = base_args(sample_records, sample_vocab, termed, **RESUME)
    code, out = _run_until(argv, "train step 2 ", signal.SIGTERM)
    # Interrupted, not finished (issue 50 item 2): what a process killed by SIGTERM reports, so
    # `run_pretraining && run_squad` or a Kubernetes Job does not take it for a finished run.
    assert code == 143, out
    assert "stopped at step" in out and "(exit status 143: interrupted)" in out
    assert not (termed / "ckpt" / "final").exists()
    assert pretrain(argv)[0] == 0  # the same command resumes, and finishes with 0
    assert max_weight_diff(weights(termed), weights(straight)) < 1e-5


@pytest.mark.parametrize(
    "overrides, message",
    [
        ({"--train_dir": "missing/*.tfrecord"}, "no TFRecord files match"),
        ({"--global_batch_size": "10", "--gradient_accumulation_steps": "3"},
         "--global_batch_size 10 disagrees with --per_gpu_batch_size 8 x "
         "--gradient_accumulation_steps 3 x 1 rank(s) = 24"),
        ({"--global_batch_size": "12"}, "--global_batch_size 12 is not a multiple of "
                                        "--per_gpu_batch_size 8 x 1 rank(s)"),
        ({"--log_frequency": "0"}, "--log_frequency must be at least 1, got 0"),
        ({"--keep_checkpoints": "0"}, "--keep_checkpoints must be at least 1, got 0"),
        ({"--checkpoint_frequency": "-1"}, "--checkpoint_frequency must be at least 0"),
        ({"--validation_frequency": "-5"}, "--validation_frequency must be at least 0"),
        ({"--load_optimizer_state": None}, "--load_optimizer_state needs --load_from checkpoint"),
        ({"--model_size": "gigantic"}, "--model_size 'gigantic' is unknown"),
        ({"--max_seq_length": "128"}, "--max_seq_length asks for 128"),
        ({"--load_from": "checkpoint"}, "no checkpoint in --checkpoint_dir"),
        # Refused before any pretraining, by the flag's own name (run_squad resolves it).
        ({"--squad_frequency": "2", "--squad_train_file": "no-such-train.json",
          "--squad_predict_file": "no-such-dev.json"},
         "error: --squad_frequency's SQuAD run: --squad_train_file no-such-train.json does not "
         "exist"),
    ],
)
def test_clear_errors(overrides, message, sample_records, sample_vocab, tmp_path):
    code, _, err = run_in_process("run_pretraining",
                                  base_args(sample_records, sample_vocab, tmp_path, **overrides))
    assert code == 2 and message in err, err[-2000:]


@pytest.mark.slow
def test_a_diverging_rate_ends_the_run_with_one_line_and_its_advice_works(sample_records,
                                                                           sample_vocab, tmp_path):
    # Without the stop, a run whose gradients overflow skips every later update and turns over
    # its data at the same step without end. LAMB at 1e30 overflows at the second update on any
    # CPU.
    argv = base_args(sample_records, sample_vocab, tmp_path, **{
        "--learning_rate": "1e30", "--total_steps": "50", "--checkpoint_frequency": "1"})
    code, stdout, stderr = pretrain(argv)
    assert code == 2, stdout[-2000:] + stderr[-2000:]
    assert "Traceback" not in stderr
    error = [line for line in stderr.splitlines() if line.startswith("error:")]
    assert len(error) == 1 and error[0].startswith(
        "error: training diverged at update 2: its gradients are not finite"), stderr[-2000:]
    # The rate decays linearly over the 50 updates: 1e30 x 49/50 at the second.
    assert "(it was 9.8e+29 at this update)" in error[0], error[0]
    assert "lower --learning_rate" in error[0]
    assert error[0].endswith("the checkpoint at step 1 holds the run before it.")
    assert not (tmp_path / "ckpt" / "final").exists()
    # What the line says to do: a lower rate over the same directory.
    fixed = base_args(sample_records, sample_vocab, tmp_path, **{
        "--total_steps": "3", "--overwrite_checkpoint_dir": None})
    ok, _ = trained(fixed)
    assert "train step 3 " in ok and (tmp_path / "ckpt" / "final").is_dir()


@pytest.mark.horovod
def test_horovod_a_diverging_rate_stops_every_rank_at_the_same_update(sample_records,
                                                                      sample_vocab, tmp_path):
    """horovodrun's ranks are processes, and how they end (exit statuses, tracebacks) is what
    this test reads."""
    # The finite check comes after the allreduce: every rank sees the same gradients, so every
    # rank stops at the same update and none waits in a collective for the others (the 300 s
    # timeout would catch a hang).
    argv = base_args(sample_records, sample_vocab, tmp_path, **{
        "--learning_rate": "1e30", "--total_steps": "50", "--per_gpu_batch_size": "4"})
    proc = subprocess.run([HOROVODRUN, "-np", "2", "--gloo", "-H", "localhost:2", sys.executable,
                           "-m", "albert.run_pretraining", *argv], capture_output=True,
                          text=True, timeout=300)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0, out[-3000:]
    # The first rank to stop ends with the one line and exit status 2; horovodrun then ends the
    # other, if it has not stopped by itself, and adds its own traceback about a failed worker.
    # No rank prints one.
    assert "exit with status code 2." in out, out[-3000:]
    assert "error: training diverged at update 2:" in out, out[-3000:]
    for rank in (0, 1):
        assert f"[{rank}]<stderr>:Traceback" not in out, out[-3000:]


@pytest.mark.slow  # the shared run trains
def test_checkpoint_from_a_different_config(planned_run, sample_records, sample_vocab, tmp_path):
    import shutil

    # A copy of the shared run: the refused command must not touch the one other tests read.
    shutil.copytree(planned_run[0] / "ckpt", tmp_path / "ckpt")
    code, _, err = pretrain(base_args(sample_records, sample_vocab, tmp_path, **{
        **PLANNED, "--total_steps": "4", "--config_override": ["num_hidden_layers=2"]}))
    assert code == 2, err[-2000:]
    assert "different model config: num_hidden_layers: checkpoint 4 vs this run 2" in err


@pytest.mark.e2e
def test_squad_frequency_logs_squad_scores(sample_records, sample_vocab, tmp_path):
    from albert.demo.squad_sample import write_sample

    train, dev = write_sample(str(tmp_path / "sq"), train_questions=64, dev_questions=16)
    # Pretraining runs in this process; its evaluation is the `python -m albert.run_squad`
    # process it starts, which is what this test reads.
    _, stderr = trained(base_args(sample_records, sample_vocab, tmp_path, **{
        "--total_steps": "2", "--squad_frequency": "2", "--squad_train_file": train,
        "--squad_predict_file": dev, "--squad_steps": "4", "--squad_max_seq_length": "128",
        "--squad_batch_size": "8"}))
    rows = [r for r in read_jsonl(tmp_path / "logs" / "metrics.jsonl") if r["split"] == "squad"]
    assert len(rows) == 1 and rows[0]["step"] == 2  # at step 2, not again at the end
    assert rows[0]["total"] == 16 and 0.0 <= rows[0]["f1"] <= 100.0
    assert {"exact", "HasAns_f1", "NoAns_f1", "best_f1"} <= set(rows[0])
    # The evaluation was `python -m albert.run_squad` on the weights of step 2, its command line
    # logged as a user reruns it, its output (with the F1 it logged) kept beside the run.
    import shlex

    from albert import run_squad

    where = tmp_path / "ckpt" / "squad" / "step_2"
    [line] = [line for line in stderr.splitlines() if " running " in line]
    python, m, module, *argv = shlex.split(line.split(" running ", 1)[1].rsplit(" > ", 1)[0])
    assert (python, m, module) == (sys.executable, "-m", "albert.run_squad")
    args = run_squad.parse_args(argv)
    assert (args.checkpoint_path, args.output_dir, args.total_steps) == (
        str(where / "model"), str(where), 4)
    log = (where / "run_squad.log").read_text()
    assert log.startswith(f"$ {sys.executable} -m albert.run_squad ")
    assert f"F1 {rows[0]['f1']:.2f}; predictions in {where}" in log, log[-3000:]
    assert json.loads((where / "eval_results.json").read_text())["f1"] == rows[0]["f1"]
    assert not (where / "model").exists() and not (where / "checkpoints").exists()


@pytest.mark.slow  # the shared run trains
def test_batch_plan_derives_accumulation_and_logs_one_line(planned_run):
    out, _, stderr = planned_run
    line = [x for x in stderr.splitlines() if "batch plan:" in x]
    assert len(line) == 1, stderr[-2000:]
    assert ("batch plan: 4 x 2 x 1 = 8 (per-GPU micro-batch x accumulation steps x ranks = "
            "sequences per update); 512 tokens per update at sequence length 64; 3 updates = 24 "
            "sequences in all") in line[0]
    # 8 sequences per update really went through: the run record keeps the plan it trained with.
    record = json.loads((out / "ckpt" / "run.json").read_text())
    assert record["batch_plan"] == {"ranks": 1, "micro_batch": 4, "accumulation": 2,
                                    "global_batch": 8}


def test_plan_only_prints_the_plan_for_n_ranks_and_trains_nothing(sample_records, sample_vocab,
                                                                  tmp_path):
    code, out, err = run_in_process("run_pretraining", base_args(
        sample_records, sample_vocab, tmp_path, **{
            "--per_gpu_batch_size": "32", "--global_batch_size": "4096", "--plan_only": None,
            "--plan_ranks": "8", "--total_steps": "100"}))
    assert code == 0, err[-2000:]
    assert "batch plan: 32 x 16 x 8 = 4096" in out
    assert not (tmp_path / "ckpt").exists() and not (tmp_path / "logs").exists()


@pytest.mark.slow
def test_same_dir_different_start_is_refused_same_command_resumes(sample_records, sample_vocab,
                                                                  tmp_path):
    first = base_args(sample_records, sample_vocab, tmp_path, **{"--total_steps": "2",
                                                                 "--checkpoint_frequency": "1"})
    trained(first)
    export = tmp_path / "export"
    import shutil
    shutil.copytree(tmp_path / "ckpt" / "final", export)
    # Another start in the same directory: refused, with the way forward in the message.
    other = base_args(sample_records, sample_vocab, tmp_path, **{
        "--total_steps": "4", "--load_from": "pretrained", "--checkpoint_path": str(export)})
    code, _, err = pretrain(other)
    assert code == 2, err[-2000:]
    assert (f"--checkpoint_dir {tmp_path / 'ckpt'} holds a run started from scratch; this "
            f"command starts from pretrained {export}. Use a new --checkpoint_dir, or add "
            "--overwrite_checkpoint_dir to discard that run") in err
    assert "Traceback" not in err
    # The same command again: the run is finished and says so instead of training, and its
    # run.json is as it was (the spec, the plans, the step: it resumes unchanged).
    record = json.loads((tmp_path / "ckpt" / "run.json").read_text())
    again, _ = trained(first)
    assert "this run already finished: 2 of --total_steps 2 updates" in again
    assert "train step" not in again
    assert record["finished"] is True
    assert json.loads((tmp_path / "ckpt" / "run.json").read_text()) == record
    # The same start with more steps: resumes from step 2.
    out, err = trained(base_args(sample_records, sample_vocab, tmp_path, **{"--total_steps": "3"}))
    assert "resuming from" in err and "train step 3 " in out
    assert "train step 1 " not in out
    # Told to discard: starts over from the export.
    out, err = trained(other + ["--overwrite_checkpoint_dir"])
    assert "discarding the run" in err and "train step 1 " in out
    record = json.loads((tmp_path / "ckpt" / "run.json").read_text())
    assert record["started_from"]["load_from"] == "pretrained" and record["finished"]


HVD_RESUME = {"--total_steps": "12", "--shuffle_buffer": "100", "--checkpoint_frequency": "3",
              "--per_gpu_batch_size": "4", "--global_batch_size": "16", "--recompute": "layers",
              "--config_override": ["hidden_dropout_prob=0.1", "attention_probs_dropout_prob=0.1",
                                    "classifier_dropout_prob=0.1"]}

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


def _sigterm_every_rank(launcher, wrapper, statuses, argv, marker):
    """`argv` under `launcher`, each rank in `wrapper`; once `marker` appears, SIGTERM to every
    rank's run_pretraining process (a container's or a spot instance's stop): (horovodrun's exit
    status, its output)."""
    import psutil  # horovodrun's own dependency

    def send(proc):
        ranks = [p for p in psutil.Process(proc.pid).children(recursive=True)
                 if "albert.run_pretraining" in p.cmdline()]
        assert len(ranks) == 2, ranks
        for rank in ranks:
            rank.send_signal(signal.SIGTERM)

    return signalled_at([*launcher, sys.executable, str(wrapper), str(statuses), *argv], marker,
                        send)


@pytest.mark.horovod
def test_horovod_kill9_then_sigterm_resumes_exactly_the_straight_run(sample_records, sample_vocab,
                                                                     tmp_path):
    """horovodrun's ranks are processes, and kill -9 and SIGTERM end processes; 143 is the exit
    status a SIGTERM leaves (issue 50 item 2)."""
    # Dropout on, two ranks, two micro-batches per update, --recompute layers (whose recomputed
    # forward pass must draw the same masks): each rank's masks are keyed by (seed, rank, update,
    # micro-batch), and each rank's input position is saved with the checkpoint. The ranks'
    # weights are identical by construction (allreduced updates), and rank 1's masks and data
    # enter every update through the allreduce, so the final weights equal the straight run's
    # only if every rank resumed its own dropout sequence and input stream exactly, after a
    # kill -9 (from the last periodic checkpoint) and after a SIGTERM (from the checkpoint the
    # stop saved).
    launcher = [HOROVODRUN, "-np", "2", "--gloo", "-H", "localhost:2"]
    straight = tmp_path / "straight"
    proc = subprocess.run([*launcher, sys.executable, "-m", "albert.run_pretraining",
                           *base_args(sample_records, sample_vocab, straight, **HVD_RESUME)],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    run = tmp_path / "interrupted"
    argv = base_args(sample_records, sample_vocab, run, **HVD_RESUME)
    code, out = _run_until(argv, "saved checkpoint", signal.SIGKILL, launcher=launcher)
    assert not (run / "ckpt" / "final").exists(), out[-3000:]
    assert sorted(os.listdir(run / "ckpt" / "data" / "2x4x2")) == ["rank-0", "rank-1"]

    # The same command resumes from step 3, and every process of the job is sent SIGTERM: the
    # ranks agree on the update to stop at, rank 0 saves, and each exits 143; horovodrun itself
    # then exits non-zero (1, naming a rank's 143).
    wrapper = tmp_path / "rank.py"
    wrapper.write_text(RANK_WRAPPER)
    statuses = tmp_path / "statuses"
    statuses.mkdir()
    code, out = _sigterm_every_rank(launcher, wrapper, statuses, argv, "train step 4 ")
    assert code != 0 and "Exit code: 143" in out, out[-3000:]
    assert "resuming from" in out
    assert "rank 0: input position of step 3 restored" in out
    assert "rank 1: input position of step 3 restored" in out
    # As a shell or horovodrun reads it: 143 returned, or (the rank horovodrun ends itself once
    # the other has exited, with a SIGTERM after its stop was saved and said) killed by SIGTERM.
    read = {p.name: int(p.read_text()) for p in statuses.iterdir()}
    assert {name: 128 - s if s < 0 else s for name, s in read.items()} == {
        "rank0": 143, "rank1": 143}, (read, out[-3000:])
    [stopped] = set(re.findall(r"stopped at step (\d+);", out))
    assert 4 <= int(stopped) < 12, stopped
    assert "Traceback (most recent call last):\n" not in "".join(
        line for line in out.splitlines(keepends=True) if line.startswith("[")), out[-3000:]
    assert not (run / "ckpt" / "final").exists()

    # And again: it finishes with 0, from the stop's checkpoint.
    proc = subprocess.run([*launcher, sys.executable, "-m", "albert.run_pretraining", *argv],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    log = proc.stdout + proc.stderr
    assert f"rank 0: input position of step {stopped} restored" in log, log[-3000:]
    assert f"rank 1: input position of step {stopped} restored" in log, log[-3000:]
    assert max_weight_diff(weights(run), weights(straight)) < 1e-5


def _copy_shards(src, dst, names=None):
    import shutil

    dst.mkdir(parents=True)
    for path in sorted(src.iterdir()):
        if names is None or path.name in names:
            shutil.copy(path, dst / path.name)
    return sorted(dst.iterdir())


def _record_offsets(data: bytes) -> list[int]:
    """Start of each record in TFRecord framing (8-byte length, 4-byte CRC, data, 4-byte CRC)."""
    import struct

    offsets, pos = [], 0
    while pos < len(data):
        offsets.append(pos)
        pos += 16 + struct.unpack("<Q", data[pos:pos + 8])[0]
    return offsets


@pytest.mark.slow
def test_corrupt_shard_is_named_progress_saved_and_skip_corrupt_records_trains_on(
        sample_records, sample_vocab, tmp_path):
    shards = _copy_shards(sample_records / "train", tmp_path / "data" / "train")
    data = bytearray(shards[1].read_bytes())
    # A flipped bit inside record 30 of the second file: with no shuffling the four files are read
    # one record at a time in turn, so the run meets it around update 15 of batch 8.
    data[_record_offsets(bytes(data))[30] + 20] ^= 0x10
    shards[1].write_bytes(bytes(data))
    argv = base_args(tmp_path / "data", sample_vocab, tmp_path / "run", **{
        "--total_steps": "40", "--shuffle_buffer": "0", "--log_frequency": "5"})
    code, out, err = pretrain(argv)
    assert code == 2, out[-2000:] + err[-2000:]
    assert "error:" in err and shards[1].name in err
    assert "--skip_corrupt_records" in err and "Traceback" not in err
    # The updates before the damaged record were saved before the run stopped.
    assert "train step 10 " in out
    saved = sorted(int(p.name[5:-6]) for p in (tmp_path / "run" / "ckpt").glob("ckpt-*.index"))
    assert saved and 10 <= saved[-1] < 40, saved
    # The way on: the damaged file is read up to its bad record; the run resumes and finishes.
    out, err = trained(argv + ["--skip_corrupt_records"])
    assert "resuming from" in err and "train step 40 " in out
    assert shards[1].name in err  # the warning at start names the damaged file


@pytest.mark.horovod
def test_rank_with_only_empty_shards_stops_every_rank(sample_records, sample_vocab, tmp_path):
    """horovodrun's ranks are processes; the run's exit status is theirs."""
    train = tmp_path / "data" / "train"
    _copy_shards(sample_records / "train", train,
                 names={"part-00000-of-00004.tfrecord"})
    (train / "part-00001-of-00004.tfrecord").write_bytes(b"")  # rank 1's only file
    argv = base_args(tmp_path / "data", sample_vocab, tmp_path / "run", **{"--total_steps": "2"})
    proc = subprocess.run([HOROVODRUN, "-np", "2", "--gloo", "-H", "localhost:2", sys.executable,
                           "-m", "albert.run_pretraining", *argv], capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode != 0
    out = proc.stdout + proc.stderr
    assert "1 of 2 ranks have no records to read: rank 1's 1 file(s)" in out, out[-3000:]


def test_validation_files_are_checked_at_start(sample_records, sample_corpus, sample_vocab,
                                               tmp_path):
    from albert import create_pretraining_data

    other = tmp_path / "other"
    create_pretraining_data.run(create_pretraining_data.parse_args([
        "--input", str(sample_corpus), "--spm_model", sample_vocab, "--output_dir", str(other),
        "--max_seq_length", "32", "--max_predictions_per_seq", "5", "--num_shards", "1",
        "--processes", "1", "--no_progress"]))
    code, out, err = pretrain(base_args(sample_records, sample_vocab, tmp_path / "run", **{
        "--val_dir": str(other / "train"), "--validation_frequency": "1"}))
    assert code == 2, err[-2000:]
    assert "error:" in err and "part-00000-of-00001" in err
    assert "train step" not in out  # refused before any training was lost
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "part-00000-of-00001.tfrecord").write_bytes(b"")
    code, _, err = pretrain(base_args(sample_records, sample_vocab, tmp_path / "run2", **{
        "--val_dir": str(empty)}))
    assert code == 2 and "validation would report nothing" in err, err[-2000:]


# -- memory: --recompute, the memory plan, --per_gpu_batch_size auto ---------------------------

def _auto_choice(log: str) -> tuple[int, int]:
    import re

    found = re.search(r"--per_gpu_batch_size auto: micro-batch (\d+) x accumulation (\d+)", log)
    assert found, log[-3000:]
    return int(found.group(1)), int(found.group(2))


def test_plan_only_prints_the_memory_plan_and_auto_fits_more_with_recompute(
        sample_records, sample_vocab, tmp_path):
    from albert.model.config import AlbertConfig
    from albert.train.memory_plan import GIB, memory_plan

    chosen = {}
    for mode in ("none", "layers"):
        code, out, err = run_in_process("run_pretraining", base_args(
            sample_records, sample_vocab, tmp_path / mode, **{
                "--model_size": "xlarge", "--max_seq_length": "512", "--plan_only": None,
                "--plan_ranks": "8", "--per_gpu_batch_size": "auto",
                "--global_batch_size": "4096", "--memory_budget_gb": "32", "--recompute": mode,
                "--total_steps": "100"}))
        assert code == 0, err[-2000:]
        micro, accum = _auto_choice(out)
        assert micro * accum * 8 == 4096
        assert f"batch plan: {micro} x {accum} x 8 = 4096" in out
        line = [x for x in out.splitlines() if x.startswith("memory plan: ")]
        assert len(line) == 1 and f"recompute {mode}" in line[0], out
        # The printed plan is albert.plan's, and it fits the budget with the safety margin.
        config = AlbertConfig.from_preset("xlarge", vocab_size=2000)
        plan = memory_plan(config, 512, micro, recompute=mode, ranks=8, accumulation=accum,
                           max_predictions=PREDS)
        assert line[0].startswith(f"memory plan: {plan.total / GIB:.2f} GB per GPU")
        assert plan.total <= 0.9 * 32 * GIB
        chosen[mode] = micro
        assert not (tmp_path / mode / "ckpt").exists()
    assert chosen["layers"] >= 2.5 * chosen["none"], chosen


@pytest.mark.slow
def test_auto_micro_batch_on_cpu_trains_with_the_plans_choice(sample_records, sample_vocab,
                                                              tmp_path):
    from albert.model.config import AlbertConfig
    from albert.train.memory_plan import GIB, SAFETY_MARGIN, memory_plan

    config = AlbertConfig.from_preset("tiny", vocab_size=2000)

    def total(micro):
        return memory_plan(config, SEQ, micro, recompute="layers", accumulation=16 // micro,
                           max_predictions=PREDS, device="cpu").total

    # A budget where a micro-batch of 4 fits and 8 does not.
    budget = (total(4) + total(8)) / 2 / (1 - SAFETY_MARGIN)
    log = "".join(trained(base_args(sample_records, sample_vocab, tmp_path, **{
        "--per_gpu_batch_size": "auto", "--global_batch_size": "16", "--recompute": "layers",
        "--memory_budget_gb": f"{budget / GIB:.9f}", "--total_steps": "1"})))
    assert _auto_choice(log) == (4, 4)
    assert "8 would plan" in log and "batch plan: 4 x 4 x 1 = 16" in log
    assert "memory plan: " in log and "recompute layers" in log
    record = json.loads((tmp_path / "ckpt" / "run.json").read_text())
    assert record["batch_plan"] == {"ranks": 1, "micro_batch": 4, "accumulation": 4,
                                    "global_batch": 16}
    # Resumed with room for 16 now: the run keeps the micro-batch it started with.
    log = "".join(trained(base_args(sample_records, sample_vocab, tmp_path, **{
        "--per_gpu_batch_size": "auto", "--global_batch_size": "16", "--recompute": "layers",
        "--memory_budget_gb": f"{4 * total(16) / GIB:.9f}", "--total_steps": "2"})))
    assert _auto_choice(log) == (4, 4) and "kept from the run this command resumes" in log
    assert "resum" in log.lower()


@pytest.mark.parametrize("overrides, message", [
    ({"--per_gpu_batch_size": "auto"}, "--per_gpu_batch_size auto needs --global_batch_size"),
    ({"--per_gpu_batch_size": "auto", "--global_batch_size": "16",
      "--memory_budget_gb": "0.01"},
     "--per_gpu_batch_size auto: not even a micro-batch of 1 fits 90% of 0.01 GB"),
    ({"--memory_budget_gb": "-1"}, "--memory_budget_gb must be a size in GB above 0, got -1.0"),
    ({"--memory_budget_gb": "inf"}, "--memory_budget_gb must be a size in GB above 0, got inf"),
    ({"--per_gpu_batch_size": "auto", "--global_batch_size": "0", "--memory_budget_gb": "8"},
     "--global_batch_size must be at least 1, got 0"),
    ({"--plan_only": None, "--per_gpu_batch_size": "auto", "--global_batch_size": "8",
      "--memory_budget_gb": "8", "--max_seq_length": "100000"},
     "--max_seq_length 100000 exceeds the model's max_position_embeddings (512)"),
], ids=["auto_without_global", "nothing_fits", "negative_budget", "infinite_budget",
        "zero_global_batch", "plan_beyond_positions"])
def test_memory_flag_errors(overrides, message, sample_records, sample_vocab, tmp_path):
    code, _, err = run_in_process("run_pretraining",
                                  base_args(sample_records, sample_vocab, tmp_path, **overrides))
    assert code == 2 and f"error: {message}" in err, err[-2000:]


def test_plan_only_warns_when_a_fixed_micro_batch_exceeds_the_budget(sample_records,
                                                                   sample_vocab, tmp_path):
    code, out, err = run_in_process("run_pretraining", base_args(
        sample_records, sample_vocab, tmp_path, **{
            "--plan_only": None, "--per_gpu_batch_size": "8", "--memory_budget_gb": "0.5"}))
    assert code == 0, err[-2000:]
    assert ("warning: this plan does not fit 90% of --memory_budget_gb 0.5; try "
            "--per_gpu_batch_size auto or --recompute layers") in out
    # A --checkpoint_path that is here but holds no config is an error, not a guess.
    code, out, err = run_in_process("run_pretraining", base_args(
        sample_records, sample_vocab, tmp_path, **{
            "--plan_only": None, "--load_from": "pretrained",
            "--checkpoint_path": str(tmp_path)}))
    assert code == 2 and out == "" and len(err.splitlines()) == 1, out + err
    assert err.startswith(f"error: --checkpoint_path {tmp_path} holds no model config"), err


@pytest.mark.e2e
def test_after_a_replay_the_next_restart_restores_its_input_position(sample_records, sample_vocab,
                                                                      tmp_path):
    """A run resumed under another batch plan replays its input stream; the position it saves
    after that must be restorable, or every later restart replays again. The replaying run is a
    process, killed -9 once it saved; the others train in this process, whose weights equal
    those of a process bit for bit."""
    plan = {"--shuffle_buffer": "300", "--checkpoint_frequency": "2", "--global_batch_size": "8"}
    straight = tmp_path / "straight"
    trained(base_args(sample_records, sample_vocab, straight, **plan, **{"--total_steps": "2"}))
    trained(base_args(sample_records, sample_vocab, straight, **plan, **{
        "--total_steps": "6", "--per_gpu_batch_size": "4"}))

    out = tmp_path / "restarted"
    trained(base_args(sample_records, sample_vocab, out, **plan, **{"--total_steps": "2"}))
    release_lock(out / "ckpt")
    # Resumed with micro-batch 4 instead of 8: it replays, and is killed once it saved step 4.
    argv = base_args(sample_records, sample_vocab, out, **plan, **{
        "--total_steps": "6", "--per_gpu_batch_size": "4"})
    code, replayed = _run_until(argv, "saved checkpoint", signal.SIGKILL)
    assert code == -signal.SIGKILL, replayed
    assert "replaying the input stream past 16 records" in replayed
    _, restored = trained(argv)
    assert "input position of step 4 restored" in restored, restored[-3000:]
    assert "replaying" not in restored
    assert max_weight_diff(weights(out), weights(straight)) < 1e-5


@pytest.mark.slow
def test_second_run_on_a_checkpoint_dir_in_use_is_refused_and_a_crashed_holder_is_not(
        sample_records, sample_vocab, tmp_path):
    """The holder is a process: the lock is a process's, and goes with it when it crashes. The
    runs on its directory run in this process."""
    # Issue 24 item 9: the second run's start-up would remove the first one's saves in flight.
    ckpt = tmp_path / "ckpt"
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time; from albert.train.run_dir import "
         "lock_run_directory; lock_run_directory(sys.argv[1]); print('held', flush=True); "
         "time.sleep(300)", str(ckpt)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        in_flight = ckpt / "ckpt-9_temp"
        in_flight.mkdir()
        code, _, err = pretrain(base_args(sample_records, sample_vocab, tmp_path,
                                          **{"--total_steps": "1"}))
        assert code == 2, err[-2000:]
        assert (f"error: --checkpoint_dir {ckpt} is in use by another run (pid {holder.pid} on "
                "host ") in err
        assert "Traceback" not in err and in_flight.exists()
    finally:
        holder.kill()  # as a crash: the lock goes with the process
        holder.wait()
    out, _ = trained(base_args(sample_records, sample_vocab, tmp_path, **{"--total_steps": "2"}))
    assert "train step 2 " in out and not in_flight.exists()


def test_directory_flags_naming_a_file_are_one_line_errors(sample_records, sample_vocab,
                                                           tmp_path):
    # Issue 24 item 11.
    a_file = tmp_path / "taken"
    a_file.write_text("x")
    for flag in ("--checkpoint_dir", "--log_dir"):
        code, _, err = run_in_process("run_pretraining", base_args(
            sample_records, sample_vocab, tmp_path, **{flag: str(a_file)}))
        assert code == 2 and len(err.splitlines()) == 1, err[-2000:]
        assert err.startswith(f"error: {flag} {a_file} is a file; expected a directory"), err
        assert a_file.read_text() == "x"


@pytest.mark.slow  # the shared run trains
def test_first_update_compiles_outside_the_logged_speed(planned_run):
    # Issue 24 item 15: the first seq/s (a SageMaker metric) no longer includes compile time.
    out, _, stderr = planned_run
    assert "first update (tracing and compiling the step):" in stderr
    rows = read_jsonl(out / "logs" / "metrics.jsonl")
    assert [r["step"] for r in rows] == [1, 2, 3]
    assert "seq_per_sec" not in rows[0]
    assert all(r["seq_per_sec"] > 0 for r in rows[1:])


NO_SQUAD = {"--squad_frequency": False, "--squad_train_file": False,
            "--squad_predict_file": False, "--squad_max_seq_length": False}


def _squad_files(tmp_path):
    from albert.demo.squad_sample import write_sample

    return write_sample(str(tmp_path / "sq"), train_questions=16, dev_questions=8)


@pytest.mark.parametrize(
    "overrides, message",
    [
        ({"--squad_learning_rate": "nan"}, "error: --squad_learning_rate must be a finite "
                                           "number, got nan"),
        ({"--squad_max_seq_length": "8"},
         "error: --squad_frequency's SQuAD run: --squad_max_seq_length 8 leaves no room for "
         "context after a --max_query_length 64 question"),
        ({"--squad_predict_file": "not-squad.json"},
         "error: --squad_frequency's SQuAD run: --squad_predict_file {tmp}/not-squad.json is not "
         "in the SQuAD layout (expected a top-level 'data' list)"),
        ({"--squad_train_file": "no-questions.json"},
         "error: --squad_frequency's SQuAD run: --squad_train_file {tmp}/no-questions.json holds "
         "no questions"),
        # The model these flags build has 64 positions: every SQuAD run would be refused.
        ({"--config_override": ["max_position_embeddings=64"], "--squad_max_seq_length": "128"},
         "error: --squad_frequency's SQuAD run: --squad_max_seq_length 128 exceeds the model's "
         "max_position_embeddings (64)"),
        ({"--squad_frequency": "-1"}, "--squad_frequency must be at least 0 (0: no SQuAD during "
                                      "pretraining), got -1"),
        ({**NO_SQUAD, "--squad_steps": "300", "--squad_batch_size": "4"},
         "--squad_steps, --squad_batch_size are for SQuAD during pretraining, which is off "
         "without --squad_frequency N"),
        ({**NO_SQUAD, "--squad_frequency": "0", "--squad_learning_rate": "1e-4"},
         "--squad_learning_rate is for SQuAD during pretraining, which is off without "
         "--squad_frequency N"),
        ({"--squad_predict_file": False, "--spm_model": False},
         "--squad_frequency 2 needs --squad_predict_file and --spm_model"),
    ],
)
def test_in_run_squad_values_are_refused_before_pretraining_by_their_own_names(
        overrides, message, sample_records, sample_vocab, tmp_path, monkeypatch):
    # Each of these used to start pretraining, whose every SQuAD evaluation then failed (or, for
    # a --squad_* flag without --squad_frequency, was silently ignored).
    train, dev = _squad_files(tmp_path)
    (tmp_path / "not-squad.json").write_text('{"questions": []}')
    (tmp_path / "no-questions.json").write_text('{"version": "v2.0", "data": []}')
    monkeypatch.chdir(tmp_path)
    squad = {"--squad_frequency": "2", "--squad_train_file": train, "--squad_predict_file": dev,
             "--squad_max_seq_length": "128"}
    argv = base_args(sample_records, sample_vocab, tmp_path, **{**squad, **overrides})
    argv = [str(tmp_path / a) if a.endswith(".json") and "/" not in a else a for a in argv]
    code, out, err = run_in_process("run_pretraining", argv)
    assert code == 2, err[-2000:]
    [line] = [line for line in err.splitlines() if "error:" in line]
    assert message.format(tmp=tmp_path) in line, err[-2000:]
    assert "--learning_rate" not in line.replace("--squad_learning_rate", "")  # the child's name
    assert "Traceback" not in err and not (tmp_path / "ckpt").exists()


def test_a_fixed_squad_window_names_the_run_squad_default_it_keeps(sample_records, sample_vocab,
                                                                   tmp_path):
    from albert import run_pretraining

    assert run_pretraining.squad_names(
        "--max_seq_length 8 leaves no room after a --max_query_length 64 question") == (
        "--squad_max_seq_length 8 leaves no room after a --max_query_length 64 question "
        "(--max_query_length: run_squad's default, which SQuAD during pretraining keeps)")
    # A name that only begins like a translated one is left alone.
    assert run_pretraining.squad_names("--learning_rate_x") == (
        "--learning_rate_x (--learning_rate_x: run_squad's default, which SQuAD during "
        "pretraining keeps)")
