"""The training update's speed: what run_pretraining runs (Trainer.train_step) on synthetic
batches of the real shapes, its FLOPs per sequence and MFU; beside it, interleaved, transformers'
PyTorch step (--compare_hf) and the other --recompute mode (--compare_recompute). The FLOPs
formula and the peak are in scripts/benchmark.py's docstring."""

from __future__ import annotations

import os
import platform
import statistics
import time

from benchmarks.hf_reference import make_hf_step
from benchmarks.memory import memory_report
from benchmarks.profile import profile_steps

# Published dense (no sparsity) tensor-core peaks, FLOP/s, by precision.
GPU_PEAKS = {
    "H200": {"bf16": 989.4e12, "fp16": 989.4e12, "fp32": 494.7e12},
    "H100": {"bf16": 989.4e12, "fp16": 989.4e12, "fp32": 494.7e12},
    "A100": {"bf16": 312e12, "fp16": 312e12, "fp32": 156e12},
    "A10G": {"bf16": 125e12, "fp16": 125e12, "fp32": 31.2e12},
    "L4": {"bf16": 121e12, "fp16": 121e12, "fp32": 30.3e12},
    "V100": {"bf16": 0.0, "fp16": 125e12, "fp32": 15.7e12},
}


def flops_per_sequence(config, seq: int, preds: int) -> float:
    """Training FLOPs of one sequence, matmuls only (scripts/benchmark.py's docstring has the
    formula): counted, not measured, so MFU means the same on every device."""
    s, e, h, i = seq, config.embedding_size, config.hidden_size, config.intermediate_size
    layers, v = config.num_hidden_layers, config.vocab_size
    forward = (2 * s * e * h
               + layers * (8 * s * h * h + 4 * s * s * h + 4 * s * h * i)
               + 2 * preds * h * e + 2 * preds * e * v
               + 2 * h * h + 4 * h)
    return 3.0 * forward


def random_update_batch(args, vocab_size, rng):
    """One whole update's input, [accumulation, micro-batch, seq], drawn from `rng` as real
    records look: random ids, random sorted masked positions, two segments, both sentence
    orders. Not albert.tasks.Task.synthetic_batch: that is one micro-batch [micro-batch, seq]
    of fixed positions and labels, for a trial whose only question is whether it fits."""
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
    """The update's speed and MFU. The measurements that compare with it or look inside it
    (memory, profile, transformers' step, the other recompute mode) run within it: they need
    its model, its process state or its repeats to interleave with."""
    import numpy as np
    import tensorflow as tf

    from albert.model.config import AlbertConfig
    from albert.model.modeling import AlbertForPreTraining
    from albert.tasks.losses import PRETRAINING_METRICS, pretraining_loss
    from albert.train import distributed
    from albert.train.optimization import make_optimizer
    from albert.train.precision import set_precision
    from albert.train.run_spec import Execution
    from albert.train.trainer import Trainer
    from albert.train.xla_plan import plan_for_run

    dist = distributed.init()
    set_precision(args.precision)
    config = AlbertConfig.from_preset(args.model_size, vocab_size=args.vocab_size,
                                      classifier_dropout_prob=0.0)
    model = AlbertForPreTraining(config).build_for_config()
    batch = random_update_batch(args, config.vocab_size, np.random.default_rng(dist.rank))

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

    xla = plan_for_run(Execution(precision=args.precision, eager=args.eager,
                                  xla="off" if args.skip_xla else args.xla), dist)
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
