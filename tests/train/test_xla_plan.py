"""The XLA plan: --xla on/off/auto, the probe (faked: its outcome depends on the CPU), rank 0's
choice on every rank, and a recorded plan reused on resume."""

import os

import pytest
import tensorflow as tf

from albert.train import xla_plan
from albert.train.distributed import Distributed


@pytest.mark.parametrize("xla_rate, onednn_rate, gradient", [(2e11, 1e11, True),
                                                              (1e11, 2e11, False)])
def test_auto_xla_compiles_the_gradient_only_where_its_matmul_wins(monkeypatch, xla_rate,
                                                                    onednn_rate, gradient):
    calls = []

    def fake_matmul_flops(dtype, jit, **kwargs):
        calls.append((dtype, jit))
        return xla_rate if jit else onednn_rate

    monkeypatch.setattr(xla_plan, "matmul_flops", fake_matmul_flops)
    plan = xla_plan.choose_xla("auto", "bf16", Distributed())
    assert plan.gradient is gradient and plan.update is True
    assert "200 GFLOP/s" in plan.reason and "100 GFLOP/s" in plan.reason
    assert calls and all(dtype == tf.bfloat16 for dtype, _ in calls)  # probed in the compute dtype
    assert xla_plan.choose_xla("off", "fp32") == (False, False, "--xla off", False)
    assert xla_plan.choose_xla("on", "fp32")[:2] == (True, True)
    with pytest.raises(ValueError, match="^mode must be one of"):
        xla_plan.choose_xla("yes", "fp32")


@pytest.mark.parametrize("jit", [False, True])
def test_matmul_probe_is_the_chains_flops_over_its_fastest_repeat(monkeypatch, jit):
    n, chain = 64, 3
    # The timed function is a chain of exactly `chain` n x n matmuls: 2 n^3 FLOPs each.
    chain_fn, a = xla_plan._matmul_chain(tf.float32, jit, n, chain)
    graph = chain_fn.get_concrete_function(a).graph
    matmuls = [op for op in graph.get_operations() if op.type == "MatMul"]
    assert len(matmuls) == chain
    assert all(op.inputs[0].shape == op.inputs[1].shape == (n, n) for op in matmuls)
    # It computes what it says: (a / n) applied `chain` times to a.
    expected = a.numpy().astype("float64")
    for _ in range(chain):
        expected = expected @ (a.numpy() / n)
    assert abs(chain_fn(a).numpy() - expected).max() < 1e-3 * (abs(expected).max() + 1)
    # A clock the test controls: the repeats take 2 s, 0.5 s and 4 s. The rate is the chain's
    # FLOPs over the fastest repeat, and each repeat is timed around exactly one run of it.
    ticks = iter([10.0, 12.0, 20.0, 20.5, 30.0, 34.0])

    class Clock:
        @staticmethod
        def perf_counter():
            return next(ticks)

    monkeypatch.setattr(xla_plan, "time", Clock)
    rate = xla_plan.matmul_flops(tf.float32, jit, n=n, chain=chain, repeats=3)
    assert rate == chain * 2 * n ** 3 / 0.5
    assert next(ticks, None) is None


@pytest.mark.horovod
def test_auto_xla_plan_is_rank_zeros_on_every_rank(tmp_path):
    """Two real ranks under horovodrun (a process each, which is what is tested): each rank's
    probe can come out differently on a busy host, and all must compile the same plan."""
    import subprocess
    import sys

    script = tmp_path / "plan.py"
    script.write_text(
        "from albert.train import distributed, xla_plan\n"
        "dist = distributed.init()\n"
        "fast = (lambda jit: 2e11 if jit else 1e11) if dist.rank == 0 else "
        "(lambda jit: 1e11 if jit else 2e11)\n"
        "xla_plan.matmul_flops = lambda dtype, jit, **kw: fast(jit)\n"
        "print('PLAN', dist.rank, xla_plan.choose_xla('auto', 'fp32', dist).gradient)\n")
    horovodrun = os.path.join(os.path.dirname(sys.executable), "horovodrun")
    proc = subprocess.run([horovodrun, "-np", "2", "--gloo", "-H", "localhost:2", sys.executable,
                           str(script)], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"})
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    plans = sorted(line.split("PLAN ", 1)[1] for line in proc.stdout.splitlines()
                   if "PLAN " in line)
    assert plans == ["0 True", "1 True"], proc.stdout[-3000:]


def test_a_resumed_auto_run_reuses_its_recorded_plan_without_probing(monkeypatch):
    def no_probe(*args, **kwargs):
        raise AssertionError("a resumed run must not probe again")

    monkeypatch.setattr(xla_plan, "matmul_flops", no_probe)
    recorded = {"gradient": False, "update": True, "reason": "auto: CPU float32 matmul ..."}
    plan = xla_plan.choose_xla("auto", "fp32", Distributed(), recorded=recorded)
    assert (plan.gradient, plan.update) == (False, True)
    assert plan.reason.startswith("auto, as recorded when this run started")
    # An explicit --xla still wins over the record (the runner logs the change).
    assert xla_plan.choose_xla("on", "fp32", Distributed(), recorded=recorded)[:2] == (True, True)


@pytest.mark.e2e
def test_run_records_its_plan_and_resume_reuses_it(sample_records, sample_vocab, tmp_path,
                                                   monkeypatch):
    """In this process (helpers.run_in_process), with the probe's outcome set by the test: what
    is checked is what the runner does with a plan (records it, and takes the record over a new
    probe on resume), not the probe's figures (the tests above time the real chain)."""
    import json

    from helpers import PREDS, SEQ, run_in_process

    argv = ["--filesystem_prefix", sample_records, "--train_dir", "train", "--model_size",
            "tiny", "--spm_model", sample_vocab, "--max_seq_length", SEQ,
            "--max_predictions_per_seq", PREDS, "--per_gpu_batch_size", "4", "--checkpoint_dir",
            tmp_path / "ckpt", "--log_dir", tmp_path / "logs", "--no_progress", "--xla", "auto"]
    probed = []

    def probe_where(xla_wins):
        def matmul_flops(dtype, jit, **kwargs):
            probed.append(jit)
            return 2e11 if jit == xla_wins else 1e11
        return matmul_flops

    # TensorFlow's kernels win the first probe: the gradient is not compiled (the cheaper run).
    monkeypatch.setattr(xla_plan, "matmul_flops", probe_where(xla_wins=False))
    code, _, err = run_in_process("run_pretraining", argv + ["--total_steps", "1"])
    assert code == 0, err[-2000:]
    assert probed
    record = json.loads((tmp_path / "ckpt" / "run.json").read_text())
    assert record["xla"] == {"gradient": False, "update": True, "reason":
                             "auto: CPU float32 matmul 100 GFLOP/s under XLA, 200 GFLOP/s by "
                             "TensorFlow's kernels", "eager": False}
    # The resume's probe, were it taken, would compile the gradient now; the record, rewritten
    # with a reason of the test's, says not to, and the resume follows the record unprobed.
    probed.clear()
    monkeypatch.setattr(xla_plan, "matmul_flops", probe_where(xla_wins=True))
    record["xla"]["reason"] = "auto: test record"
    (tmp_path / "ckpt" / "run.json").write_text(json.dumps(record))
    code, _, err = run_in_process("run_pretraining", argv + ["--total_steps", "2"])
    assert code == 0, err[-2000:]
    assert probed == []
    assert ("XLA gradient off, update on (auto, as recorded when this run started: auto: test "
            "record)") in err
    assert json.loads((tmp_path / "ckpt" / "run.json").read_text())["step"] == 2
