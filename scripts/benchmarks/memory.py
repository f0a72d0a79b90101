"""--memory: the update's measured peak memory beside albert.train.memory_plan's estimate, the
largest micro-batch the plan fits in --memory_budget_gb, and what --per_gpu_batch_size auto
would choose (--auto_global_batch). Called by the step right after its warm-up updates, before
anything else in the run allocates, so the peak is the update's."""

from __future__ import annotations


def peak_resident_bytes() -> int:
    """The peak resident memory of this process since it started its program.

    Not getrusage's ru_maxrss: Linux carries the parent's peak into a child at exec, so a benchmark
    started by a large process (a test runner, a notebook) would report the parent's peak.
    VmHWM belongs to the address space the program runs in."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024  # kB
    except OSError:
        pass
    import resource
    import sys

    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak if sys.platform == "darwin" else peak * 1024  # bytes on macOS, else kilobytes


def peak_memory_bytes() -> int:
    """The peak so far: the GPU allocator's peak, else the peak resident memory of this process."""
    import tensorflow as tf

    if tf.config.list_physical_devices("GPU"):
        return int(tf.config.experimental.get_memory_info("GPU:0")["peak"])
    return peak_resident_bytes()


def memory_report(args, model, ranks: int, xla_gradient: bool) -> dict:
    """The measured peak against the plan for the same shapes: the plan decides
    --per_gpu_batch_size auto and --plan_only, so this is where it is held to the truth."""
    import tensorflow as tf

    from albert.train.memory_plan import GIB, largest_fitting, memory_plan

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
    from albert.tasks.pretraining import PretrainingTask
    from albert.tasks.pretraining_options import PretrainingOptions
    from albert.train.auto_batch import micro_batch_trial
    from albert.train.memory import resolve_auto_batch
    from albert.train.run_spec import Batching, Execution, RunSpec

    spec = RunSpec(
        task="pretraining",
        options=PretrainingOptions(max_seq_length=args.max_seq_length,
                                   max_predictions_per_seq=args.max_predictions_per_seq),
        batching=Batching(per_gpu_batch_size="auto", global_batch_size=args.auto_global_batch,
                          memory_budget_gb=args.memory_budget_gb if device == "cpu" else None,
                          recompute=args.recompute),
        execution=Execution(precision=args.precision))
    trial = None
    if device == "gpu":
        seq, vocab, task = args.max_seq_length, args.vocab_size, PretrainingTask(spec)
        trial = micro_batch_trial(model, pretraining_loss,
                                  lambda n: task.synthetic_batch(n, seq, vocab),
                                  jit=xla_gradient)
    batching, line = resolve_auto_batch(spec, 1, model.config, head="pretraining",
                                        device=device, trial=trial)
    return {"auto_micro_batch": batching.per_gpu_batch_size,
            "auto_accumulation": batching.gradient_accumulation_steps, "auto_reason": line}
