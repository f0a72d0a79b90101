"""scripts/benchmark.py runs and prints its documented keys (speed itself is not asserted);
bf16, so transformers' side runs under torch.autocast. Each XLA plan is forced (--xla on/off):
--xla auto decides by a timing probe, which falls differently on different CPUs. The script is
a command line over scripts/benchmarks/ (one module per measurement), loaded here from there."""

import json
import os
import subprocess
import sys

import pytest
from helpers import REPO_ROOT

KEYS = {"seq_per_sec", "tokens_per_sec", "step_time_s", "flops_per_seq", "achieved_flops",
        "peak_flops", "mfu", "hf_seq_per_sec", "ratio_vs_hf", "reader_records_per_sec"}


@pytest.fixture
def scripts_on_path(monkeypatch):
    """scripts/ first on sys.path, as when the script runs: `benchmark` and `benchmarks` import."""
    monkeypatch.syspath_prepend(os.path.join(REPO_ROOT, "scripts"))


def run_benchmark(tmp_path, *extra):
    out = tmp_path / "bench.json"
    proc = subprocess.run([
        sys.executable, os.path.join(REPO_ROOT, "scripts", "benchmark.py"), "--model_size",
        "tiny", "--vocab_size", "2000", "--max_seq_length", "64", "--max_predictions_per_seq",
        "10", "--per_gpu_batch_size", "4", "--steps", "1", "--repeats", "1", "--warmup", "1",
        "--profile", str(tmp_path / "profile"), "--output", str(out), *extra],
        capture_output=True, text=True, timeout=600,
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(out.read_text())


def profiled_ops(result):
    """The JSON's top ops and their types, checked as every plan's must be: no idle time among
    them, most of the op time covered, nothing the profile could not see."""
    ops = result["profile_top_ops"]
    types = [op["type"] for op in ops]
    assert "IDLE" not in types
    assert 0.5 < sum(op["share"] for op in ops) <= 1.0 + 1e-6
    assert "profile_not_covered" not in result
    return ops, types


def tiny_training_flops(seq, preds):
    """scripts/benchmark.py's documented FLOPs per sequence for --model_size tiny --vocab_size
    2000, as the list of matmuls ALBERT runs: 2*m*k*n each, training = forward + a backward of
    two forwards."""
    from albert.model.config import AlbertConfig

    c = AlbertConfig.from_preset("tiny", vocab_size=2000)
    assert (c.embedding_size, c.hidden_size, c.intermediate_size, c.num_hidden_layers) == (
        64, 128, 512, 4)
    e, h, i, v = c.embedding_size, c.hidden_size, c.intermediate_size, c.vocab_size
    d, heads = c.head_size, c.num_attention_heads
    layer = [(seq, h, h)] * 4                       # query, key, value, attention output
    layer += [(seq, d, seq)] * heads                # scores, per head: [S, d] x [d, S]
    layer += [(seq, seq, d)] * heads                # context, per head: [S, S] x [S, d]
    layer += [(seq, h, i), (seq, i, h)]             # FFN in, FFN out
    matmuls = [(seq, e, h)]                         # embedding projection E -> H
    matmuls += layer * c.num_hidden_layers          # shared weights, applied once per layer
    matmuls += [(preds, h, e), (preds, e, v)]       # MLM transform and decoder, masked only
    matmuls += [(1, h, h), (1, h, 2)]               # pooler, SOP classifier
    return 3 * sum(2 * m * k * n for m, k, n in matmuls)


@pytest.mark.e2e
def test_benchmark_json(sample_records, tmp_path):
    """The shipped script run as a user runs it, start to end in its own process (a real
    process: its bf16 policy, its torch and its profiler session are its own, and its exit
    status is the shell's): the documented keys and how they relate."""
    result = run_benchmark(tmp_path, "--precision", "bf16", "--compare_hf", "--xla", "off",
                           "--input_pipeline", str(sample_records / "train" / "*"))
    assert KEYS <= set(result)
    assert result["seq_per_sec"] > 0 and 0 < result["mfu"] < 1.5
    # One update is 4 sequences of 64 tokens: the rates are per that batch and the median step.
    step = result["step_time_s"]
    assert result["step_time_min_s"] <= step <= result["step_time_max_s"]
    assert result["seq_per_sec"] * step == pytest.approx(4)
    assert result["tokens_per_sec"] * step == pytest.approx(4 * 64)
    # The FLOPs per sequence are the documented formula's, counted here matmul by matmul.
    assert result["flops_per_seq"] == pytest.approx(tiny_training_flops(seq=64, preds=10))
    assert result["achieved_flops"] * step == pytest.approx(4 * result["flops_per_seq"])
    assert result["mfu"] == pytest.approx(result["achieved_flops"] / result["peak_flops"])
    # The plan as the runners log it; the step is traced even under --xla off (never eager).
    assert result["xla"] == {"gradient": False, "update": False, "reason": "--xla off",
                             "eager": False}
    assert list((tmp_path / "profile").rglob("*.xplane.pb"))
    # The profile of this plan: TensorFlow ops only, the matmuls among them.
    ops, types = profiled_ops(result)
    assert any("MatMul" in t for t in types), types
    assert result["profile_xla_modules"] == [] and result["profile_coverage"]["xla_share"] == 0
    assert all(op["source"] == "tensorflow" for op in ops)
    # transformers' step ran the same 4 sequences, and the ratio is our speed over theirs.
    assert result["hf_seq_per_sec"] * result["hf_step_time_s"] == pytest.approx(4)
    assert result["ratio_vs_hf"] == pytest.approx(result["seq_per_sec"] / result["hf_seq_per_sec"])
    assert result["reader_vs_step"] == pytest.approx(
        result["reader_records_per_sec"] / result["seq_per_sec"])


@pytest.mark.e2e
def test_profile_names_where_the_step_time_goes_under_xla(tmp_path):
    """A real process, as a user runs the script: the profiler traces the whole process, so
    what it finds is the benchmark's own ops and XLA modules, not those of the tests that ran
    before it in the runner. (--xla off's profile is checked in test_benchmark_json.)"""
    result = run_benchmark(tmp_path, "--xla", "on")
    ops, types = profiled_ops(result)
    # The matmuls are seen as XLA dot thunks (XLA names a dot after the TensorFlow op it
    # lowers, e.g. "MatMul_1.82", or "dot").
    assert any("MatMul" in t or t == "XLA:dot" for t in types), types
    # The gradient and the update are XLA modules, and they hold nearly all the op time.
    functions = {m["step_function"] for m in result["profile_xla_modules"]}
    assert {"_grads", "_apply"} <= functions, functions
    assert result["profile_coverage"]["xla_share"] > 0.9
    assert all(op["source"] == "xla" for op in ops[:3]), ops[:3]


def test_profile_says_what_it_cannot_see(scripts_on_path, monkeypatch, tmp_path):
    # If XLA ran but its thunks left no trace events (another runtime, another device), the
    # JSON says the table misses that work rather than printing idle time as the top op.
    from benchmarks import profile

    monkeypatch.setattr(profile, "xla_thunk_times", lambda path: ({}, {}))
    import tensorflow as tf

    @tf.function(jit_compile=True)
    def step(x):
        return tf.matmul(x, x)

    x = tf.ones((64, 64))
    result = profile.profile_steps(lambda n: [step(x).numpy() for _ in range(n)], 2,
                                   str(tmp_path / "p"), xla_compiled=True)
    assert "XLA" in result["profile_not_covered"]
    assert result["profile_coverage"]["xla_ops_ms_per_step"] == 0


@pytest.mark.e2e
def test_data_prep_reports_rate_and_peak_memory(sample_corpus, sample_vocab, tmp_path):
    """A real process: the peak memory reported is the benchmark process's own, which in the
    test runner would be the runner's."""
    out = tmp_path / "bench.json"
    proc = subprocess.run([
        sys.executable, os.path.join(REPO_ROOT, "scripts", "benchmark.py"), "--no_step",
        "--data_prep", str(sample_corpus), "--spm_model", sample_vocab, "--max_seq_length", "64",
        "--max_predictions_per_seq", "10", "--output", str(out)], capture_output=True, text=True,
        timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(out.read_text())
    assert result["data_prep_instances"] > 0 and result["data_prep_instances_per_sec"] > 0
    assert result["data_prep_input_mb"] == os.path.getsize(sample_corpus) / 1e6
    # At least one Python interpreter's worth of memory was seen, and nothing absurd.
    assert 20 < result["data_prep_peak_memory_mb"] < 4000


@pytest.mark.e2e
def test_restart_cost_restores_the_same_next_batch(sample_records, tmp_path):
    """A real process: --restart_cost re-runs the script in fresh processes per case, found from
    the script's own path and sys.argv, as a user's run does."""
    out = tmp_path / "bench.json"
    proc = subprocess.run([
        sys.executable, os.path.join(REPO_ROOT, "scripts", "benchmark.py"), "--no_step",
        "--input_pipeline", str(sample_records / "train" / "*"), "--per_gpu_batch_size", "8",
        "--max_seq_length", "64", "--max_predictions_per_seq", "10", "--restart_cost", "2000",
        "--output", str(out)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    cases = json.loads(out.read_text())["restart"]
    assert [c["records"] for c in cases] == [80, 2000]
    assert all(c["same_next_batch"] and c["restore_s"] > 0 and c["replay_s"] > 0 for c in cases)


@pytest.mark.e2e
def test_peak_resident_memory_is_the_programs_own_not_its_parents():
    """A child process is what is tested: the peak a process inherits from its parent at exec."""
    # Linux hands a parent's peak to its child at exec (ru_maxrss): under a test runner that had
    # grown past the benchmark's own peak, the plan was compared with the runner's memory.
    code = ("import sys; sys.path.insert(0, sys.argv[1]); "
            "from benchmarks.memory import peak_resident_bytes; "
            "before = peak_resident_bytes(); block = bytearray(300 * 2 ** 20); "
            "block[::4096] = b'x' * len(block[::4096]); print(before, peak_resident_bytes())")
    parent = bytearray(800 * 2 ** 20)
    parent[::4096] = b"x" * len(parent[::4096])  # resident, not only reserved
    proc = subprocess.run([sys.executable, "-c", code, os.path.join(REPO_ROOT, "scripts")],
                          capture_output=True, text=True, timeout=60, check=True)
    del parent
    before, after = (int(n) / 2 ** 20 for n in proc.stdout.split())
    assert before < 200, before  # an interpreter, not the 800 MB parent
    assert 300 <= after - before < 340, (before, after)


@pytest.mark.e2e
def test_memory_plan_is_within_25_percent_of_the_measured_peak(tmp_path):
    """A real process: its measured peak resident memory is the one compared, which the test
    runner's own memory would swamp."""
    # One real update of ALBERT-base (seq 128, 8 sequences, recomputation on, XLA) in a fresh
    # process: its peak resident memory against the plan's estimate.
    out = tmp_path / "bench.json"
    proc = subprocess.run([
        sys.executable, os.path.join(REPO_ROOT, "scripts", "benchmark.py"), "--model_size",
        "base", "--max_seq_length", "128", "--per_gpu_batch_size", "8", "--steps", "1",
        "--repeats", "1", "--warmup", "1", "--xla", "on", "--recompute", "layers", "--memory",
        "--memory_budget_gb", "16", "--auto_global_batch", "4096", "--output", str(out)],
        capture_output=True, text=True, timeout=600,
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(out.read_text())
    peak, planned = result["peak_memory_bytes"], result["planned_memory_bytes"]
    assert 0.75 <= planned / peak <= 1.25, (planned, peak, result["planned_memory"])
    assert result["planned_memory"]["recompute"] == "layers"
    largest = result["planned_largest_micro_batch"]
    assert largest["layers"] >= 2.5 * largest["none"] > 0
    # --per_gpu_batch_size auto on a CPU: the plan against the budget, a divisor of 4096.
    micro, accum = result["auto_micro_batch"], result["auto_accumulation"]
    assert micro * accum == 4096 and micro <= largest["layers"]
    assert "fits 90% of 16.00 GB" in result["auto_reason"]


BAD_VALUES = [
    (["--steps", "0"], "--steps must be at least 1, got 0"),
    (["--repeats", "0"], "--repeats must be at least 1, got 0"),
    (["--per_gpu_batch_size", "0"], "--per_gpu_batch_size must be at least 1, got 0"),
    (["--max_seq_length", "16"], "--max_seq_length 16 leaves 14 positions to mask, fewer than "
                                 "--max_predictions_per_seq 20: give --max_predictions_per_seq "
                                 "14 or less, or a longer --max_seq_length"),
    (["--max_seq_length", "1024"], "--max_seq_length must be within [3, 512]"),
    (["--model_size", "huge"], "--model_size 'huge' is unknown"),
]


@pytest.mark.parametrize("flags, message", BAD_VALUES)
def test_benchmark_bad_values_are_one_line_errors_and_write_nothing(flags, message, tmp_path,
                                                                    scripts_on_path, capsys):
    """Issue 24 item 11: these were a ZeroDivisionError, a statistics error on no timings and
    a numpy traceback, after TensorFlow had started. The script's main, as `sys.exit(main())`
    runs it: exit status 2 (test_benchmark_bad_value_exits_2_as_a_process: a real one)."""
    import benchmark

    with pytest.raises(SystemExit) as stop:
        benchmark.main([*flags, "--output", str(tmp_path / "bench.json")])
    assert stop.value.code == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {message}"), captured.err
    assert not (tmp_path / "bench.json").exists()


@pytest.mark.e2e
def test_benchmark_bad_value_exits_2_as_a_process(tmp_path):
    """The one real process for a bad value: the shipped script's exit status is main's 2 and its
    stderr the one line, nothing else printed (the other values run in-process above)."""
    flags, message = BAD_VALUES[0]
    proc = subprocess.run([sys.executable, os.path.join(REPO_ROOT, "scripts", "benchmark.py"),
                           *flags, "--output", str(tmp_path / "bench.json")],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.splitlines() == [f"error: {message}"], proc.stderr
    assert not (tmp_path / "bench.json").exists()


# The flags and their defaults before the measurements moved to scripts/benchmarks/ (issue 27):
# scripts/benchmark_gpu.sh, docs/benchmarks.md, docs/memory.md and users' own command lines give
# these.
FLAGS = ["--model_size", "--max_seq_length", "--max_predictions_per_seq", "--per_gpu_batch_size",
         "--gradient_accumulation_steps", "--precision", "--xla", "--skip_xla", "--recompute",
         "--compare_recompute", "--memory", "--memory_budget_gb", "--auto_global_batch",
         "--vocab_size", "--steps", "--warmup", "--repeats", "--compare_hf", "--input_pipeline",
         "--horovod", "--restart_cost", "--data_prep", "--spm_model", "--profile",
         "--squad_padding", "--squad_questions", "--squad_predict_batch", "--output", "--no_step"]
DEFAULTS = {"model_size": "base", "max_seq_length": 128, "max_predictions_per_seq": 20,
            "per_gpu_batch_size": 8, "gradient_accumulation_steps": 1, "precision": "fp32",
            "xla": "auto", "skip_xla": False, "recompute": "none", "compare_recompute": False,
            "memory": False, "memory_budget_gb": None, "auto_global_batch": None,
            "vocab_size": 30000, "steps": 10, "warmup": 3, "repeats": 3, "compare_hf": False,
            "input_pipeline": None, "horovod": 0, "restart_cost": 0, "restart_case": 0,
            "data_prep": None, "spm_model": None, "profile": None, "squad_padding": False,
            "squad_questions": 600, "squad_predict_batch": 32, "output": "benchmark.json",
            "no_step": False, "eager": False}


def test_the_split_left_the_flags_as_they_were(scripts_on_path, capsys):
    import re

    import benchmark

    with pytest.raises(SystemExit) as stop:
        benchmark.parse_args(["--help"])
    assert stop.value.code == 0
    options = capsys.readouterr().out.split("options:", 1)[1]
    # Each flag's own line of the help, in order (the usage line repeats them).
    listed = re.findall(r"^  (--\w+)", options, re.MULTILINE)
    assert listed == FLAGS
    assert vars(benchmark.parse_args([])) == DEFAULTS


def test_the_step_batch_is_a_whole_random_update(scripts_on_path):
    """The step's batch is a whole update's, [accumulation, micro-batch, seq], random as records
    are (not albert.train.memory.synthetic_batch: one fixed micro-batch for the auto trial)."""
    import argparse

    import numpy as np
    from benchmarks import step

    args = argparse.Namespace(gradient_accumulation_steps=2, per_gpu_batch_size=3,
                              max_seq_length=16, max_predictions_per_seq=5)
    batch = step.random_update_batch(args, 100, np.random.default_rng(0))
    assert batch["input_ids"].shape == (2, 3, 16) and batch["sop_labels"].shape == (2, 3)
    positions = batch["masked_lm_positions"].numpy()
    assert positions.shape == (2, 3, 5)
    # Distinct and sorted, never [CLS] (0) or the final [SEP] (15); ids above the specials.
    assert (np.diff(positions, axis=-1) > 0).all() and positions.min() >= 1
    assert positions.max() <= 14
    ids = batch["input_ids"].numpy()
    assert ids.min() >= 5 and ids.max() < 100
    types = batch["token_type_ids"].numpy()
    assert (types[..., :8] == 0).all() and (types[..., 8:] == 1).all()


@pytest.mark.e2e
def test_relaunch_runs_the_script_again_with_its_flags(scripts_on_path, tmp_path):
    """--restart_cost and --horovod re-run scripts/benchmark.py in fresh processes: the re-run
    finds the script and its package, takes the flags it is given and writes its JSON where the
    caller reads it, not to the user's --output."""
    from benchmarks.relaunch import drop_flag, rerun

    assert drop_flag(["--a", "1", "--output=x", "--b"], "--output") == ["--a", "1", "--b"]
    assert drop_flag(["--output", "x", "--b"], "--output") == ["--b"]
    user_output = tmp_path / "user.json"
    result = rerun(["--no_step", "--steps", "7", "--output", str(user_output)])
    assert result["config"]["steps"] == 7 and result["config"]["no_step"] is True
    assert not user_output.exists()
