"""scripts/benchmark.py runs and prints its documented keys (speed itself is not asserted);
bf16, so transformers' side runs under torch.autocast."""

import json
import os
import subprocess
import sys

from conftest import REPO_ROOT

KEYS = {"seq_per_sec", "tokens_per_sec", "step_time_s", "flops_per_seq", "achieved_flops",
        "peak_flops", "mfu", "hf_seq_per_sec", "ratio_vs_hf", "reader_records_per_sec"}


def test_benchmark_json(sample_records, tmp_path):
    out = tmp_path / "bench.json"
    proc = subprocess.run([
        sys.executable, os.path.join(REPO_ROOT, "scripts", "benchmark.py"), "--model_size",
        "tiny", "--vocab_size", "2000", "--max_seq_length", "64", "--max_predictions_per_seq",
        "10", "--per_gpu_batch_size", "4", "--steps", "1", "--repeats", "1", "--warmup", "1",
        "--precision", "bf16", "--compare_hf", "--input_pipeline",
        str(sample_records / "train" / "*"), "--profile", str(tmp_path / "profile"),
        "--output", str(out)], capture_output=True, text=True, timeout=600,
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(out.read_text())
    assert KEYS <= set(result)
    assert result["seq_per_sec"] > 0 and 0 < result["mfu"] < 1.5
    # 4 sequences of 64 tokens: the analytic FLOPs match the documented formula.
    assert result["tokens_per_sec"] == result["seq_per_sec"] * 64
    assert result["flops_per_seq"] > 0
    assert set(result["xla"]) == {"gradient", "update", "reason"} and result["xla"]["update"]
    # The profile names real TensorFlow op types and accounts for the traced time.
    ops = result["profile_top_ops"]
    assert any("MatMul" in op["type"] for op in ops), ops
    assert 0.5 < sum(op["share"] for op in ops) <= 1.0 + 1e-6
    assert list((tmp_path / "profile").rglob("*.xplane.pb"))
