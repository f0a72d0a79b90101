"""Measure training throughput, MFU and scaling; print one JSON object (and write it to --output).

    .venv/bin/python scripts/benchmark.py --model_size base --max_seq_length 128 \\
        --per_gpu_batch_size 8 --precision fp32 --compare_hf

What is timed is the real update run_pretraining uses (Trainer.train_step: XLA micro-batch
gradients, accumulation, allreduce, clipping, LAMB) on synthetic batches of the real shapes, after
warm-up, repeated --repeats times; the reported step time is the median and the spread is min/max.

FLOPs per sequence (matmuls only; training = 3 x forward: the backward pass costs two forwards),
S = sequence, P = predicted positions, E/H/I = embedding/hidden/FFN sizes, L = layers, V = vocab:
    forward = 2*S*E*H                                 embedding projection
            + L * (8*S*H^2 + 4*S^2*H + 4*S*H*I)       Q/K/V/out, scores + context, FFN
            + 2*P*H*E + 2*P*E*V                       MLM head at the masked positions only
            + 2*H^2 + 4*H                             pooler, SOP classifier
MFU = achieved FLOP/s / peak. On CPU the peak is measured in the same run with a large matmul in
the compute dtype (float32, or bfloat16 with --precision bf16), the faster of TensorFlow's kernel
and XLA's; on a GPU it is the published dense peak for the precision (the measured matmul peak is
reported beside it).

--compare_hf runs transformers' model at the same precision (torch.autocast for bf16/fp16, with
a GradScaler for fp16) on the same kind of device (CUDA when torch sees a GPU).

Stable JSON keys: xla (which step functions XLA compiled, and why), seq_per_sec, tokens_per_sec,
step_time_s, step_time_min_s, step_time_max_s,
flops_per_seq, achieved_flops, peak_flops, measured_matmul_flops, mfu; with --compare_hf also
hf_seq_per_sec, ratio_vs_hf; with --compare_recompute other_recompute,
other_recompute_step_time_s and recompute_time_ratio (step time with --recompute layers over
without, the median of interleaved pairs); with --input_pipeline reader_records_per_sec,
reader_vs_step;
with --memory peak_memory_bytes (measured through the warm-up updates: on a CPU the peak
resident memory of this process, on a GPU the allocator's peak from
tf.config.experimental.get_memory_info), planned_memory_bytes (albert.train.plan.memory_plan's
estimate of the same quantity: on a GPU without the runtime term, which the allocator does not see),
planned_memory (the plan's parts, bytes) and, with --memory_budget_gb,
planned_largest_micro_batch ({"none": m, "layers": m}: the largest micro-batch the plan fits in
the budget, with --per_gpu_batch_size auto's margin, without and with recomputation) and, with
--auto_global_batch, auto_micro_batch, auto_accumulation and auto_reason (auto's choice and log
line); with --horovod N scaling (seq_per_sec for 1 and N
processes, weak_scaling_efficiency); with --restart_cost N (with --input_pipeline) restart:
[{records, restore_s, replay_s, state_mb, same_next_batch}] after 10 updates and after N records;
with --data_prep data_prep_instances_per_sec, data_prep_input_mb and data_prep_peak_memory_mb (the
generator's whole process tree); with --profile profile_top_ops (type, source
"tensorflow" or "xla", self_time_ms_per_step, share), profile_xla_modules (each XLA-compiled step
function's share), profile_coverage (TensorFlow op, XLA thunk and TensorFlow "idle" milliseconds
per step) and, where XLA ran but left no events, profile_not_covered; with --squad_padding the
keys below.

--squad_padding times SQuAD prediction and fine-tuning updates with every window padded to
--max_seq_length (padding "max") and with windows padded to their batch (padding "batch":
albert.data.squad's prediction_batches and training_batches, length buckets of 64), on one
AlbertForQuestionAnswering of --model_size, its repeats interleaved. The question set is built in
the run, in SQuAD v2.0 format, with contexts of realistic length: runs of 5 to 20 consecutive
sentences of CPython's help topics (albert.demo.squad_sample.passages((5, 20)), the bundled corpus),
a fact planted in each, --squad_questions questions (a third unanswerable), windowed at
--max_seq_length with doc_stride 128 and 64 question tokens, with a 3,000-piece vocabulary trained
on the same help topics (or --spm_model). At 384 about a quarter of the positions of fixed padding
are padding, as on the real SQuAD v2.0 dev set. Prediction: every window once per repeat,
--squad_predict_batch windows a batch; fine-tuning: --steps updates of --per_gpu_batch_size x
--gradient_accumulation_steps windows (AdamW, the XLA plan of --xla) per repeat, after --warmup
updates, an update at each bucket length and one prediction pass, which compile every shape.
Keys: squad_windows (the prediction windows), squad_padding_share ({"max", "batch"} x {"predict",
"finetune"}: the share of the positions computed that are padding), squad_widths ({"predict",
"finetune"}: how many batch-padded batches or updates had each length), squad_predict_seq_per_sec
and squad_finetune_seq_per_sec ({"max", "batch"}: windows per second, the median repeat),
squad_predict_speedup and squad_finetune_speedup (batch over max), squad_xla (the XLA plan).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

# Published dense (no sparsity) tensor-core peaks, FLOP/s, by precision.
GPU_PEAKS = {
    "H200": {"bf16": 989.4e12, "fp16": 989.4e12, "fp32": 494.7e12},
    "H100": {"bf16": 989.4e12, "fp16": 989.4e12, "fp32": 494.7e12},
    "A100": {"bf16": 312e12, "fp16": 312e12, "fp32": 156e12},
    "A10G": {"bf16": 125e12, "fp16": 125e12, "fp32": 31.2e12},
    "L4": {"bf16": 121e12, "fp16": 121e12, "fp32": 30.3e12},
    "V100": {"bf16": 0.0, "fp16": 125e12, "fp32": 15.7e12},
}


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model_size", default="base")
    p.add_argument("--max_seq_length", type=int, default=128)
    p.add_argument("--max_predictions_per_seq", type=int, default=20)
    p.add_argument("--per_gpu_batch_size", type=int, default=8)
    p.add_argument("--gradient_accumulation_steps", type=int, default=1)
    p.add_argument("--precision", choices=("fp32", "fp16", "bf16"), default="fp32")
    p.add_argument("--xla", choices=("auto", "on", "off"), default="auto",
                   help="as in run_pretraining: which step functions XLA compiles")
    p.add_argument("--skip_xla", action="store_true", help="same as --xla off")
    p.set_defaults(eager=False)  # what resolve.xla_plan_from_flags reads; the step is never eager
    p.add_argument("--recompute", choices=("none", "layers"), default="none",
                   help="recompute each transformer layer's activations in the backward pass")
    p.add_argument("--compare_recompute", action="store_true",
                   help="also time the other --recompute mode in this run, interleaved with it "
                        "(a shared VM drifts between runs): recompute_time_ratio")
    p.add_argument("--memory", action="store_true",
                   help="report the measured peak memory of the update beside the memory plan")
    p.add_argument("--memory_budget_gb", type=float, default=None,
                   help="with --memory: also report the largest micro-batch the plan fits in "
                        "this many GB (GiB), with and without recomputation")
    p.add_argument("--auto_global_batch", type=int, default=None, metavar="G",
                   help="with --memory: also choose the micro-batch as --per_gpu_batch_size auto "
                        "does for --global_batch_size G on this rank (on a GPU by trial steps, "
                        "beside this run's own state; on a CPU from the plan)")
    p.add_argument("--vocab_size", type=int, default=30000)
    p.add_argument("--steps", type=int, default=10, help="timed updates per repeat")
    p.add_argument("--warmup", type=int, default=3, help="untimed updates first (compilation)")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--compare_hf", action="store_true",
                   help="time transformers' PyTorch AlbertForPreTraining in the same run")
    p.add_argument("--input_pipeline", default=None, metavar="TFRECORD_PATTERN",
                   help="also time the reader on these TFRecords")
    p.add_argument("--horovod", type=int, default=0, metavar="N",
                   help="run under horovodrun with 1 and N processes: weak scaling")
    p.add_argument("--restart_cost", type=int, default=0, metavar="RECORDS",
                   help="with --input_pipeline: time putting the input stream back where a run "
                        "stopped, after 10 updates and after RECORDS consumed records, by "
                        "restoring the saved iterator state (what run_pretraining does) and by "
                        "replaying")
    p.add_argument("--restart_case", type=int, default=0, help=argparse.SUPPRESS)
    p.add_argument("--data_prep", default=None, metavar="TEXT_FILE",
                   help="also time create_pretraining_data on this text")
    p.add_argument("--spm_model", default=None, help="vocabulary for --data_prep")
    p.add_argument("--profile", default=None, metavar="DIR",
                   help="also trace --steps updates with the TensorFlow profiler into DIR (view: "
                        "xprof --logdir DIR) and report the op types taking the most time")
    p.add_argument("--squad_padding", action="store_true",
                   help="time SQuAD prediction and fine-tuning with windows padded to "
                        "--max_seq_length and to their batch (see the docstring)")
    p.add_argument("--squad_questions", type=int, default=600,
                   help="with --squad_padding: questions in the built SQuAD set")
    p.add_argument("--squad_predict_batch", type=int, default=32,
                   help="with --squad_padding: windows per prediction batch")
    p.add_argument("--output", default="benchmark.json")
    p.add_argument("--no_step", action="store_true", help="skip the training-step benchmark")
    args = p.parse_args(argv)
    problem = _bad_value(args)
    if problem:
        # One line (main's user_errors), as the runners answer a bad flag (argparse's error adds
        # the usage).
        from albert.errors import FlagError

        raise FlagError(problem)
    return args


def _bad_value(args) -> str | None:
    """The first flag value the benchmark cannot run with, named, or None. Checked before
    TensorFlow is imported: a 0 reached a division by --steps, range(--repeats) left no time
    to report, and a sequence too short for its predictions failed deep in numpy."""
    from albert.model.config import PRESETS

    minimums = {"steps": 1, "repeats": 1, "warmup": 0, "per_gpu_batch_size": 1,
                "gradient_accumulation_steps": 1, "max_predictions_per_seq": 1, "horovod": 0,
                "restart_cost": 0, "squad_questions": 1, "squad_predict_batch": 1}
    for name, minimum in minimums.items():
        if getattr(args, name) < minimum:
            return f"--{name} must be at least {minimum}, got {getattr(args, name)}"
    if args.model_size not in PRESETS:
        return f"--model_size {args.model_size!r} is unknown; expected one of {sorted(PRESETS)}"
    if args.vocab_size < 6:  # synthetic ids are drawn above the 5 special ones
        return f"--vocab_size must be at least 6, got {args.vocab_size}"
    positions = PRESETS[args.model_size].get("max_position_embeddings", 512)
    if not 3 <= args.max_seq_length <= positions:
        return (f"--max_seq_length must be within [3, {positions}] (the {args.model_size} "
                f"model's positions), got {args.max_seq_length}")
    # Masked positions are drawn without [CLS] and the final [SEP].
    room = args.max_seq_length - 2
    if args.max_predictions_per_seq > room:
        return (f"--max_seq_length {args.max_seq_length} leaves {room} positions to mask, fewer "
                f"than --max_predictions_per_seq {args.max_predictions_per_seq}: give "
                f"--max_predictions_per_seq {room} or less, or a longer --max_seq_length")
    if args.memory_budget_gb is not None and not 0 < args.memory_budget_gb < 1e6:
        return f"--memory_budget_gb must be a size in GB above 0, got {args.memory_budget_gb}"
    if args.memory_budget_gb is not None and not args.memory:
        return "--memory_budget_gb needs --memory"
    if args.data_prep and not args.spm_model:  # before the other benchmarks, not after them
        return "--data_prep needs --spm_model"
    if args.auto_global_batch is not None:
        if not args.memory:
            return "--auto_global_batch needs --memory"
        if args.auto_global_batch < 1:
            return f"--auto_global_batch must be at least 1, got {args.auto_global_batch}"
    if args.squad_padding and args.max_seq_length < 64 + 4:
        return (f"--squad_padding windows 64 question tokens: --max_seq_length must be at "
                f"least 68, got {args.max_seq_length}")
    return None


def flops_per_sequence(config, seq: int, preds: int) -> float:
    s, e, h, i = seq, config.embedding_size, config.hidden_size, config.intermediate_size
    layers, v = config.num_hidden_layers, config.vocab_size
    forward = (2 * s * e * h
               + layers * (8 * s * h * h + 4 * s * s * h + 4 * s * h * i)
               + 2 * preds * h * e + 2 * preds * e * v
               + 2 * h * h + 4 * h)
    return 3.0 * forward


def synthetic_batch(args, vocab_size, rng):
    import numpy as np
    import tensorflow as tf

    a, b, s, p = (args.gradient_accumulation_steps, args.per_gpu_batch_size,
                  args.max_seq_length, args.max_predictions_per_seq)
    positions = np.sort(np.stack([np.stack([rng.choice(np.arange(1, s - 1), p, replace=False)
                                            for _ in range(b)]) for _ in range(a)]), axis=-1)
    return {
        "input_ids": tf.constant(rng.integers(5, vocab_size, (a, b, s)), tf.int32),
        "attention_mask": tf.ones((a, b, s), tf.int32),
        "token_type_ids": tf.constant(np.repeat(np.arange(s)[None, None] >= s // 2, b, 1)
                                      .repeat(a, 0).astype(np.int32)),
        "masked_lm_positions": tf.constant(positions, tf.int32),
        "masked_lm_ids": tf.constant(rng.integers(5, vocab_size, (a, b, p)), tf.int32),
        "masked_lm_weights": tf.ones((a, b, p), tf.float32),
        "sop_labels": tf.constant(rng.integers(0, 2, (a, b)), tf.int32),
    }


def measure_matmul_peak(precision: str, on_gpu: bool) -> float:
    """The faster of TensorFlow's kernel and XLA's on a large matmul in the compute dtype (the
    step may run on either: see albert.train.xla_plan.choose_xla)."""
    from albert.train.precision import COMPUTE_DTYPES
    from albert.train.xla_plan import matmul_flops

    n = 8192 if on_gpu else 2048
    dtype = COMPUTE_DTYPES[precision]
    return max(matmul_flops(dtype, jit=False, n=n), matmul_flops(dtype, jit=True, n=n))


def bench_step(args) -> dict:
    import numpy as np
    import tensorflow as tf

    from albert.cli.resolve import xla_plan_from_flags
    from albert.model.config import AlbertConfig
    from albert.model.modeling import AlbertForPreTraining
    from albert.tasks.losses import PRETRAINING_METRICS, pretraining_loss
    from albert.train import distributed
    from albert.train.optimization import make_optimizer
    from albert.train.precision import set_precision
    from albert.train.trainer import Trainer

    dist = distributed.init()
    set_precision(args.precision)
    config = AlbertConfig.from_preset(args.model_size, vocab_size=args.vocab_size,
                                      classifier_dropout_prob=0.0)
    model = AlbertForPreTraining(config).build_for_config()
    batch = synthetic_batch(args, config.vocab_size, np.random.default_rng(dist.rank))

    def make_run_steps(model, recompute):
        optimizer = make_optimizer("lamb", model.trainable_variables)
        trainer = Trainer(model, pretraining_loss, optimizer, lambda s: 1e-4, dist,
                          metric_names=PRETRAINING_METRICS,
                          accum_steps=args.gradient_accumulation_steps, precision=args.precision,
                          xla=xla, recompute=recompute)
        trainer.broadcast_state()

        def run_steps(n):
            for _ in range(n):
                trainer.train_step(batch)
            int(trainer.step)  # wait for the last update

        return run_steps

    xla = xla_plan_from_flags(args, dist)
    run_steps = make_run_steps(model, args.recompute)
    run_steps(args.warmup)
    # Before anything else in the run allocates (transformers' model, the other recompute mode's
    # model, the matmul probe).
    memory = memory_report(args, model, dist.size, xla.gradient) if args.memory else {}
    hf_run = make_hf_step(args) if args.compare_hf else None
    other_mode = {"none": "layers", "layers": "none"}[args.recompute]
    other_run = None
    if args.compare_recompute:
        other_run = make_run_steps(AlbertForPreTraining(config).build_for_config(), other_mode)
        other_run(args.warmup)
    times, hf_times, other_times = [], [], []
    # Interleaved repeats (ours, theirs, ours, ...): a shared VM's speed drifts over minutes, and
    # timing one after the other would hand the drift to one side.
    for _ in range(args.repeats):
        t = time.perf_counter()
        run_steps(args.steps)
        times.append((time.perf_counter() - t) / args.steps)
        if hf_run is not None:
            t = time.perf_counter()
            hf_run(args.steps)
            hf_times.append((time.perf_counter() - t) / args.steps)
        if other_run is not None:
            t = time.perf_counter()
            other_run(args.steps)
            other_times.append((time.perf_counter() - t) / args.steps)
    step_time = statistics.median(times)
    profile = (profile_steps(run_steps, args.steps, args.profile, xla.gradient or xla.update)
               if args.profile else {})
    seqs = args.per_gpu_batch_size * args.gradient_accumulation_steps * dist.size
    gpus = tf.config.list_physical_devices("GPU")
    measured = measure_matmul_peak(args.precision, bool(gpus))
    peak, device = measured, f"CPU ({os.cpu_count()} cores, {platform.processor() or 'x86_64'})"
    if gpus:
        details = tf.config.experimental.get_device_details(gpus[0])
        device = details.get("device_name", "GPU")
        published = next((v for k, v in GPU_PEAKS.items() if k in device), None)
        if published and published.get(args.precision):
            peak = published[args.precision] * dist.size
    flops = flops_per_sequence(config, args.max_seq_length, args.max_predictions_per_seq)
    achieved = flops * seqs / step_time
    extra = {}
    if hf_times:
        hf_seqs = args.per_gpu_batch_size * args.gradient_accumulation_steps
        extra = {"hf_seq_per_sec": hf_seqs / statistics.median(hf_times),
                 "hf_step_time_s": statistics.median(hf_times),
                 "ratio_vs_hf": statistics.median(hf_times) / step_time * dist.size}
    if other_times:
        by_mode = {args.recompute: times, other_mode: other_times}
        extra |= {"other_recompute": other_mode,
                  "other_recompute_step_time_s": statistics.median(other_times),
                  # Per repeat, then the median: each pair ran back to back.
                  "recompute_time_ratio": statistics.median(
                      layers / none for layers, none in zip(by_mode["layers"], by_mode["none"],
                                                            strict=True))}
    return extra | profile | memory | {
        "device": device,
        "ranks": dist.size,
        "xla": xla._asdict(),
        "seq_per_sec": seqs / step_time,
        "tokens_per_sec": seqs * args.max_seq_length / step_time,
        "step_time_s": step_time,
        "step_time_min_s": min(times),
        "step_time_max_s": max(times),
        "flops_per_seq": flops,
        "achieved_flops": achieved,
        "peak_flops": peak,
        "measured_matmul_flops": measured,
        "mfu": achieved / peak,
        "parameters": int(sum(int(tf.size(v)) for v in model.weights)),
    }


def peak_memory_bytes() -> int:
    """The peak so far: the GPU allocator's peak, else the peak resident memory of this process."""
    import resource

    import tensorflow as tf

    if tf.config.list_physical_devices("GPU"):
        return int(tf.config.experimental.get_memory_info("GPU:0")["peak"])
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # kilobytes on Linux


def memory_report(args, model, ranks: int, xla_gradient: bool) -> dict:
    import tensorflow as tf

    from albert.train.plan import GIB, largest_fitting, memory_plan

    config = model.config

    device = "gpu" if tf.config.list_physical_devices("GPU") else "cpu"

    shape = dict(ranks=ranks, accumulation=args.gradient_accumulation_steps,
                 max_predictions=args.max_predictions_per_seq, device=device,
                 precision=args.precision)
    planned = memory_plan(config, args.max_seq_length, args.per_gpu_batch_size,
                          recompute=args.recompute, **shape)
    out = {"peak_memory_bytes": peak_memory_bytes(),
           "planned_memory_bytes": planned.total - (planned.runtime if device == "gpu" else 0),
           "planned_memory": planned.as_dict()}
    if args.memory_budget_gb:
        budget = args.memory_budget_gb * GIB
        out["planned_largest_micro_batch"] = {
            mode: largest_fitting(config, args.max_seq_length, budget, recompute=mode, **shape)
            for mode in ("none", "layers")}
    if args.auto_global_batch:
        out.update(auto_micro_batch(args, model, xla_gradient, device))
    return out


def auto_micro_batch(args, model, xla_gradient: bool, device: str) -> dict:
    """What --per_gpu_batch_size auto chooses for --auto_global_batch on this rank: on a GPU by
    trial steps (while this run's weights, gradients and optimizer slots are held), else from the
    plan against --memory_budget_gb or the available memory."""
    from albert.tasks.losses import pretraining_loss
    from albert.train.memory import micro_batch_trial, resolve_auto_batch, synthetic_batch
    from albert.train.run_spec import Batching, Execution, RunSpec

    spec = RunSpec(
        task="pretraining",
        features={"max_seq_length": args.max_seq_length,
                  "max_predictions_per_seq": args.max_predictions_per_seq},
        batching=Batching(per_gpu_batch_size="auto", global_batch_size=args.auto_global_batch,
                          memory_budget_gb=args.memory_budget_gb if device == "cpu" else None,
                          recompute=args.recompute),
        execution=Execution(precision=args.precision))
    trial = None
    if device == "gpu":
        seq, preds, vocab = args.max_seq_length, args.max_predictions_per_seq, args.vocab_size
        trial = micro_batch_trial(model, pretraining_loss,
                                  lambda n: synthetic_batch("pretraining", n, seq, vocab, preds),
                                  jit=xla_gradient)
    batching, line = resolve_auto_batch(spec, 1, model.config, head="pretraining",
                                        device=device, trial=trial)
    return {"auto_micro_batch": batching.per_gpu_batch_size,
            "auto_accumulation": batching.gradient_accumulation_steps, "auto_reason": line}


def profile_steps(run_steps, steps: int, logdir: str, xla_compiled: bool) -> dict:
    """Trace `steps` updates and say where their time went.

    TensorFlow ops come from xprof's framework_op_stats (self time by op type). That table
    cannot see inside an XLA cluster: the whole compiled gradient shows up as "IDLE". XLA's CPU
    runtime does record one trace event per HLO thunk (each carries an `hlo_op` stat), so those
    are read from the raw trace and summed by HLO instruction kind ("XLA:dot", "XLA:MatMul",
    "XLA:add_multiply_fusion", ...) and by compiled module. Shares are of the traced op time
    (TensorFlow ops' self time + XLA thunks' self time, summed over threads); TensorFlow's IDLE is
    left out of the table (it is either idle threads or XLA time counted twice) and reported
    as profile_coverage.tensorflow_idle_ms_per_step. Where XLA compiled part of the step but the
    trace holds no HLO events for it, profile_not_covered says so instead of leaving a table
    that silently misses that work.
    """
    import glob

    import tensorflow as tf
    from xprof.convert import raw_to_tool_data

    tf.profiler.experimental.start(logdir)
    try:
        run_steps(steps)
    finally:
        tf.profiler.experimental.stop()
    planes = sorted(glob.glob(os.path.join(logdir, "**", "*.xplane.pb"), recursive=True))[-1:]
    data, _ = raw_to_tool_data.xspace_to_tool_data(planes, "framework_op_stats", {})
    table = json.loads(data)
    table = table[0] if isinstance(table, list) else table
    cols = [c["id"] for c in table["cols"]]
    kind, self_us = cols.index("type"), cols.index("total_self_time")
    tf_ops: dict[str, float] = {}
    for row in table["rows"]:
        cells = [(c or {}).get("v") for c in row["c"]]
        tf_ops[cells[kind]] = tf_ops.get(cells[kind], 0.0) + cells[self_us]
    idle_us = tf_ops.pop("IDLE", 0.0)
    xla_ops, xla_modules = xla_thunk_times(planes[0])
    ops = [(k, v, "tensorflow") for k, v in tf_ops.items()]
    ops += [(f"XLA:{k}", v, "xla") for k, v in xla_ops.items()]
    total = sum(v for _, v, _ in ops) or 1.0
    top = sorted(ops, key=lambda op: -op[1])[:15]
    xla_us = sum(xla_ops.values())
    out = {
        "profile_dir": logdir,
        "profile_top_ops": [{"type": k, "source": source, "self_time_ms_per_step": v / 1e3 / steps,
                             "share": v / total} for k, v, source in top],
        "profile_xla_modules": [
            {"module": k, "step_function": _step_function(k), "ms_per_step": v / 1e3 / steps,
             "share": v / total}
            for k, v in sorted(xla_modules.items(), key=lambda kv: -kv[1])],
        "profile_coverage": {
            "tensorflow_ops_ms_per_step": sum(tf_ops.values()) / 1e3 / steps,
            "xla_ops_ms_per_step": xla_us / 1e3 / steps,
            "xla_share": xla_us / total,
            "tensorflow_idle_ms_per_step": idle_us / 1e3 / steps,
        },
    }
    if xla_compiled and not xla_us:
        out["profile_not_covered"] = (
            "XLA-compiled step functions left no HLO events in this trace, so their time is "
            "missing from profile_top_ops; dump the compiled HLO with XLA_FLAGS="
            "--xla_dump_to=DIR and read the per-kernel timeline in xprof's trace viewer")
    return out


def _step_function(module: str) -> str:
    """XLA module 'a_inference__grads_4543__.126' -> the traced function '_grads'."""
    found = re.search(r"inference_(\w+?)_\d+__", module)
    return found.group(1) if found else module


def _hlo_kind(name: str) -> str:
    """'MatMul_1.82' -> 'MatMul', 'add_multiply_fusion.19' -> 'add_multiply_fusion'."""
    base = re.sub(r"\.\d+$", "", name)
    return re.sub(r"_\d+$", "", base)


def xla_thunk_times(xplane_path: str) -> tuple[dict, dict]:
    """Self time (microseconds, summed over threads) of the XLA HLO thunks in one trace file, by
    HLO instruction kind and by compiled module. A thunk that contains others (a conditional, a
    while loop) is charged only for the time its children do not cover."""
    from tensorflow.tsl.profiler.protobuf import xplane_pb2

    space = xplane_pb2.XSpace()
    with open(xplane_path, "rb") as f:
        space.ParseFromString(f.read())
    by_kind: dict[str, float] = {}
    by_module: dict[str, float] = {}
    for plane in space.planes:
        stat_names = {i: m.name for i, m in plane.stat_metadata.items()}
        for line in plane.lines:
            events = []
            for event in line.events:
                stats = {stat_names.get(s.metadata_id): s for s in event.stats}
                if "hlo_op" not in stats:
                    continue
                module = stats.get("hlo_module")
                module_name = (plane.stat_metadata[module.ref_value].name
                               if module is not None and module.ref_value else "?")
                name = plane.event_metadata[event.metadata_id].name
                events.append((event.offset_ps, event.offset_ps + event.duration_ps, name,
                               module_name))
            events.sort(key=lambda e: (e[0], -e[1]))
            # Self time: subtract each event's span from its innermost enclosing event.
            self_ps = [end - start for start, end, _, _ in events]
            stack: list[int] = []
            for i, (start, end, _, _) in enumerate(events):
                while stack and events[stack[-1]][1] <= start:
                    stack.pop()
                if stack:
                    self_ps[stack[-1]] -= end - start
                stack.append(i)
            for (_, _, name, module_name), ps in zip(events, self_ps, strict=True):
                us = max(ps, 0) / 1e6
                by_kind[_hlo_kind(name)] = by_kind.get(_hlo_kind(name), 0.0) + us
                by_module[module_name] = by_module.get(module_name, 0.0) + us
    return by_kind, by_module


def make_hf_step(args):
    """transformers' PyTorch AlbertForPreTraining: forward, backward, AdamW, same shapes.
    Returns run(n), already warmed up."""
    import numpy as np
    import torch
    import transformers

    from albert.model.config import AlbertConfig

    torch.set_num_threads(os.cpu_count() or 1)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    config = AlbertConfig.from_preset(args.model_size, vocab_size=args.vocab_size,
                                      classifier_dropout_prob=0.0)
    model = transformers.AlbertForPreTraining(transformers.AlbertConfig(**config.to_dict()))
    model.to(device).train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    rng = np.random.default_rng(0)
    b = args.per_gpu_batch_size * args.gradient_accumulation_steps
    s = args.max_seq_length
    ids = torch.tensor(rng.integers(5, config.vocab_size, (b, s)))
    labels = torch.full((b, s), -100)
    for row in range(b):
        pos = rng.choice(np.arange(1, s - 1), args.max_predictions_per_seq, replace=False)
        labels[row, pos] = ids[row, pos]
    types = torch.tensor((np.arange(s)[None] >= s // 2).repeat(b, 0).astype(np.int64))
    sop = torch.tensor(rng.integers(0, 2, (b,)))
    ids, labels, types, sop = (t.to(device) for t in (ids, labels, types, sop))
    autocast_dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(args.precision)
    scaler = torch.amp.GradScaler(device, enabled=args.precision == "fp16")

    def step():
        opt.zero_grad(set_to_none=True)
        with torch.autocast(device, dtype=autocast_dtype, enabled=autocast_dtype is not None):
            out = model(input_ids=ids, token_type_ids=types, labels=labels,
                        sentence_order_label=sop)
        scaler.scale(out.loss).backward()
        scaler.step(opt)
        scaler.update()
        if device == "cuda":
            torch.cuda.synchronize()

    def run(n):
        for _ in range(n):
            step()

    run(args.warmup)
    return run


def bench_reader(args, step_seq_per_sec: float | None) -> dict:
    from albert.data.reader import pretraining_dataset

    ds = pretraining_dataset(args.input_pipeline, args.per_gpu_batch_size, args.max_seq_length,
                             args.max_predictions_per_seq, shuffle_buffer=1000)
    it = iter(ds)
    for _ in range(20):
        next(it)
    n, t = 0, time.perf_counter()
    while time.perf_counter() - t < 5.0:
        next(it)
        n += args.per_gpu_batch_size
    rate = n / (time.perf_counter() - t)
    out = {"reader_records_per_sec": rate}
    if step_seq_per_sec:
        out["reader_vs_step"] = rate / step_seq_per_sec
    return out


def restart_case(args) -> dict:
    """One restart, measured in a fresh process: consume `--restart_case` batches, save the
    iterator as a checkpoint would, then time (a) a new pipeline restored from that state and
    (b) a new pipeline that skips the consumed records, each up to its first batch."""
    import tensorflow as tf

    from albert.data.reader import pretraining_dataset

    def make(skip=0):
        return pretraining_dataset(args.input_pipeline, args.per_gpu_batch_size,
                                   args.max_seq_length, args.max_predictions_per_seq, seed=1,
                                   shuffle_buffer=10_000, skip_records=skip)

    batches = args.restart_case
    it = iter(make())
    for _ in range(batches):
        next(it)
    with tempfile.TemporaryDirectory() as tmp:
        path = tf.train.Checkpoint(data=it).write(os.path.join(tmp, "ckpt"))
        state_bytes = sum(os.path.getsize(os.path.join(tmp, f)) for f in os.listdir(tmp))
        expected = next(it)["input_ids"].numpy()
        del it
        start = time.perf_counter()
        restored = iter(make())
        status = tf.train.Checkpoint(data=restored).read(path)
        status.expect_partial()
        first = next(restored)["input_ids"].numpy()
        restore_s = time.perf_counter() - start
    start = time.perf_counter()
    replayed = next(iter(make(batches * args.per_gpu_batch_size)))["input_ids"].numpy()
    replay_s = time.perf_counter() - start
    return {"records": batches * args.per_gpu_batch_size, "restore_s": restore_s,
            "replay_s": replay_s, "state_mb": state_bytes / 1e6,
            "same_next_batch": bool((first == expected).all() and (replayed == expected).all())}


def bench_restart(args, argv) -> dict:
    results = []
    for batches in (10, -(-args.restart_cost // args.per_gpu_batch_size)):
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "r.json")
            inner = _drop_flag(_drop_flag(argv, "--restart_cost"), "--output")
            subprocess.run([sys.executable, os.path.abspath(__file__), *inner, "--no_step",
                            "--restart_case", str(batches), "--output", out],
                           check=True, capture_output=True, text=True)
            with open(out) as f:
                results.append(json.load(f)["restart"])
    return {"restart": results}


def bench_horovod(args, argv) -> dict:
    horovodrun = os.path.join(os.path.dirname(sys.executable), "horovodrun")
    results = {}
    for n in (1, args.horovod):
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "r.json")
            inner = [a for a in argv if a not in ("--compare_hf",)]
            inner = _drop_flag(_drop_flag(_drop_flag(inner, "--horovod"), "--output"),
                               "--input_pipeline")
            cmd = [horovodrun, "-np", str(n), "--gloo", "-H", f"localhost:{n}", sys.executable,
                   os.path.abspath(__file__), *inner, "--output", out]
            subprocess.run(cmd, check=True, capture_output=True, text=True)
            with open(out) as f:
                results[n] = json.load(f)["seq_per_sec"]
    n = args.horovod
    return {"scaling": {"processes": [1, n], "seq_per_sec": [results[1], results[n]],
                        "weak_scaling_efficiency": results[n] / (n * results[1])}}


def _drop_flag(argv, flag):
    out, skip = [], False
    for a in argv:
        if skip:
            skip = False
            continue
        if a == flag:
            skip = True
            continue
        if a.startswith(flag + "="):
            continue
        out.append(a)
    return out


def bench_data_prep(args) -> dict:
    """create_pretraining_data on --data_prep (a file, directory, glob or comma list, any format
    the generator reads), shuffle on, one process per core: instances/s (start-up included) and
    the peak resident memory of the whole process tree (generator, readers, workers), sampled
    every 50 ms."""
    import psutil

    if not args.spm_model:
        raise SystemExit("error: --data_prep needs --spm_model")
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "out")
        cmd = [sys.executable, "-m", "albert.create_pretraining_data", "--input", args.data_prep,
               "--spm_model", args.spm_model, "--output_dir", out, "--max_seq_length",
               str(args.max_seq_length), "--max_predictions_per_seq",
               str(args.max_predictions_per_seq), "--processes", str(os.cpu_count() or 1),
               "--num_shards", "4", "--no_progress"]
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        peak = 0
        root = psutil.Process(proc.pid)
        while proc.poll() is None:
            try:
                tree = [root, *root.children(recursive=True)]
                peak = max(peak, sum(p.memory_info().rss for p in tree if p.is_running()))
            except psutil.Error:
                pass
            time.sleep(0.05)
        wall = time.perf_counter() - start
        if proc.returncode != 0:
            raise SystemExit(f"error: create_pretraining_data failed: {proc.stderr.read()[-500:]}")
        with open(os.path.join(out, "summary.json")) as f:
            summary = json.load(f)
    text_bytes = sum(os.path.getsize(f) for f in summary.get("input_files", [])
                     if os.path.isfile(f))
    return {"data_prep_instances_per_sec": summary["instances"] / wall,
            "data_prep_instances": summary["instances"], "data_prep_processes": os.cpu_count(),
            "data_prep_input_mb": text_bytes / 1e6, "data_prep_peak_memory_mb": peak / 1e6}


def squad_padding_set(args, tmp: str):
    """(tokenizer, dev features, training-cache prefix) of the benchmark's SQuAD set (the
    docstring says how it is built)."""
    import random

    from albert import train_tokenizer
    from albert.data import squad
    from albert.data.tokenization import load_tokenizer
    from albert.demo import squad_sample
    from albert.demo.sample import write_corpus

    spm_model = args.spm_model
    if not spm_model:
        write_corpus(os.path.join(tmp, "corpus.txt"))
        spm_model = train_tokenizer.train(train_tokenizer.parse_args([
            "--input", os.path.join(tmp, "corpus.txt"), "--vocab_size", "3000",
            "--output_dir", os.path.join(tmp, "vocab"), "--processes", "1"]))
    tokenizer = load_tokenizer(spm_model)
    data = squad_sample.make_split(squad_sample.passages((5, 20)), args.squad_questions,
                                   "v2.0", seed=1, prefix="bench")
    path = os.path.join(tmp, "squad.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(data, f)
    examples, _, _ = squad.read_squad(path)
    settings = squad.FeatureSettings(args.max_seq_length, 128, 64)
    dev = squad.featurize(examples, tokenizer, settings, training=False)
    squad.write_feature_cache(dev, os.path.join(tmp, "dev"))
    train = squad.featurize(examples, tokenizer, settings, training=True)
    random.Random(1).shuffle(train)  # as run_squad caches its training windows
    squad.write_feature_cache(train, os.path.join(tmp, "train"))
    return tokenizer, dev, os.path.join(tmp, "dev"), os.path.join(tmp, "train")


def bench_squad_padding(args) -> dict:
    """SQuAD prediction and fine-tuning, padding "max" against padding "batch" (see the
    docstring)."""
    import collections

    import tensorflow as tf

    from albert.cli.resolve import xla_plan_from_flags
    from albert.data import squad
    from albert.model.config import AlbertConfig
    from albert.model.modeling import AlbertForQuestionAnswering
    from albert.tasks.losses import SQUAD_METRICS, squad_loss
    from albert.train import distributed
    from albert.train.optimization import make_optimizer
    from albert.train.precision import set_precision
    from albert.train.trainer import Trainer

    paddings = ("max", "batch")
    seq = args.max_seq_length
    micro, accum = args.per_gpu_batch_size, args.gradient_accumulation_steps
    dist = distributed.init()
    set_precision(args.precision)
    xla = xla_plan_from_flags(args, dist)
    with tempfile.TemporaryDirectory() as tmp:
        tokenizer, dev, dev_prefix, train_prefix = squad_padding_set(args, tmp)
        lengths = [f.length for f in dev]
        config = AlbertConfig.from_preset(args.model_size, vocab_size=len(tokenizer))
        model = AlbertForQuestionAnswering(config).build_for_config()
        inputs = ("input_ids", "attention_mask", "token_type_ids")

        @tf.function(jit_compile=xla.gradient, reduce_retracing=True)
        def logits(batch):
            out = model({k: batch[k] for k in inputs}, training=False)
            return out["start_logits"], out["end_logits"]

        predict_batches = {p: list(squad.prediction_batches(dev_prefix, args.squad_predict_batch,
                                                            seq, p)) for p in paddings}

        def predict(padding):
            for batch in predict_batches[padding]:
                start, _ = logits(batch)
            start.numpy()  # wait for the last batch

        trainer = Trainer(model, squad_loss, make_optimizer("adamw", model.trainable_variables),
                          lambda step: 1e-5, dist, metric_names=SQUAD_METRICS,
                          accum_steps=accum, precision=args.precision, xla=xla)
        trainer.broadcast_state()
        streams = {p: iter(squad.training_batches(train_prefix, micro, accum, seq, seed=1,
                                                  padding=p)) for p in paddings}
        widths = {p: collections.Counter() for p in paddings}
        real = {p: 0 for p in paddings}

        def finetune(padding, updates, count=False):
            for _ in range(updates):
                batch = next(streams[padding])
                if count:
                    widths[padding][int(batch["input_ids"].shape[-1])] += 1
                    real[padding] += int(tf.reduce_sum(batch["attention_mask"]))
                trainer.train_step(batch)
            int(trainer.step)  # wait for the last update

        # Compile every shape before timing: a prediction pass, and an update at every length
        # a bucket can have (the first max-padded update cut to it; labels past it -> 0).
        first = next(iter(squad.training_batches(train_prefix, micro, accum, seq, seed=2,
                                                 padding="max")))
        for width in sorted({squad.padded_length(n, seq) for n in range(1, seq + 1)}):
            cut = {k: v[..., :width] if v.shape.rank == 3 else v for k, v in first.items()}
            for k in ("start_positions", "end_positions"):
                cut[k] = tf.where(cut[k] < width, cut[k], 0)
            trainer.train_step(cut)
        for padding in paddings:
            predict(padding)
            finetune(padding, args.warmup)
        times = {(what, p): [] for what in ("predict", "finetune") for p in paddings}
        for _ in range(args.repeats):
            for padding in paddings:
                start = time.perf_counter()
                predict(padding)
                times["predict", padding].append(time.perf_counter() - start)
                start = time.perf_counter()
                finetune(padding, args.steps, count=True)
                times["finetune", padding].append(time.perf_counter() - start)
    per_update = micro * accum
    rate = {(what, p): (len(dev) if what == "predict" else args.steps * per_update)
            / statistics.median(times[what, p]) for what, p in times}
    predict_widths = collections.Counter(int(b["input_ids"].shape[1])
                                         for b in predict_batches["batch"])
    share = {}
    for p in paddings:
        positions = sum(int(b["input_ids"].shape[0]) * int(b["input_ids"].shape[1])
                        for b in predict_batches[p])
        trained = sum(w * n * per_update for w, n in widths[p].items())
        share[p] = {"predict": 1 - sum(lengths) / positions, "finetune": 1 - real[p] / trained}
    return {
        "squad_windows": len(dev),
        "squad_padding_share": share,
        "squad_widths": {"predict": dict(sorted(predict_widths.items())),
                         "finetune": dict(sorted(widths["batch"].items()))},
        "squad_predict_seq_per_sec": {p: rate["predict", p] for p in paddings},
        "squad_finetune_seq_per_sec": {p: rate["finetune", p] for p in paddings},
        "squad_predict_speedup": rate["predict", "batch"] / rate["predict", "max"],
        "squad_finetune_speedup": rate["finetune", "batch"] / rate["finetune", "max"],
        "squad_xla": {"gradient": xla.gradient, "update": xla.update, "reason": xla.reason},
    }


def main(argv=None):
    from albert.cli.flags import user_errors

    with user_errors():  # a flag that cannot work, a file that cannot be used: one line, exit 2
        return _main(argv)


def _main(argv):
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parse_args(argv)
    result = {"config": {k: v for k, v in vars(args).items() if k != "output"}}
    if args.profile:
        try:
            import xprof  # noqa: F401
        except ImportError:
            raise SystemExit("error: --profile needs xprof to summarise the trace; run "
                             "scripts/setup.sh or pip install -e '.[profile]'") from None
    if not args.no_step:  # a FlagError: --auto_global_batch that nothing fits, named by the flags
        result.update(bench_step(args))
    if args.restart_case:
        result["restart"] = restart_case(args)
    elif args.input_pipeline and args.restart_cost:
        result.update(bench_restart(args, argv))
    elif args.input_pipeline:
        result.update(bench_reader(args, result.get("seq_per_sec")))
    if args.horovod:
        result.update(bench_horovod(args, argv))
    if args.data_prep:
        result.update(bench_data_prep(args))
    if args.squad_padding:
        result.update(bench_squad_padding(args))
    rank = int(os.environ.get("HOROVOD_RANK", "0"))
    if rank == 0:
        text = json.dumps(result, indent=2)
        print(text)
        with open(args.output, "w") as f:
            f.write(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
