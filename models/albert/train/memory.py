"""A run's memory: the memory plan of its flags, --per_gpu_batch_size auto, and what --plan_only
prints.

The plan itself (what each part of a rank's memory comes to) is albert.train.memory_plan's
arithmetic; this module applies it to a runner's flags and decides the micro-batch for
--per_gpu_batch_size auto (from the plan against a budget, or from the trial steps of
albert.train.auto_batch, which runs them on a GPU and hands rank 0's choice to every rank). It
imports no TensorFlow: --plan_only prints its lines without it.
"""

from __future__ import annotations

import dataclasses
import logging
import math
import os

from albert.errors import SettingError
from albert.model.config import AlbertConfig
from albert.train.batch_plan import BatchPlan, largest_micro_batch
from albert.train.memory_plan import GIB, SAFETY_MARGIN, memory_plan, plan_fits
from albert.train.run_spec import Batching, RunSpec, check_fits, model_config

logger = logging.getLogger("albert.train.memory")


def config_for_plan(spec: RunSpec) -> tuple[AlbertConfig, str | None]:
    """The config of the model a run would train, read without building it (--plan_only), and a
    note when a file it names is not on this machine (a cluster's /fsx path planned from a
    laptop): then the plan assumes the preset's vocabulary, or the preset itself."""
    source = spec.model
    path = source.checkpoint_path
    if source.pretrained and path:
        try:
            if os.path.isfile(os.path.join(path, "config.json")) or os.path.isfile(path):
                return AlbertConfig.from_json_file(path), None
            return AlbertConfig.from_google_json_file(path), None
        except FileNotFoundError:
            if os.path.exists(path):
                raise SettingError(f"{{checkpoint_path}} {path} holds no model config "
                                   "(config.json or albert_config.json)",
                                   "checkpoint_path") from None
            preset = dataclasses.replace(source, model_config=None)
            config = model_config(preset, None)
            return config, (f"--checkpoint_path {path} has no model config on this machine: the "
                            f"memory plan assumes --model_size {source.model_size} with "
                            f"{config.vocab_size} pieces")
    if spec.vocabulary and not os.path.isfile(spec.vocabulary):
        config = model_config(source, None)
        return config, (f"--spm_model {spec.vocabulary} is not on this machine: the memory plan "
                        f"assumes a vocabulary of {config.vocab_size} pieces")
    return model_config(source, spec.vocabulary), None


def memory_plan_of(spec: RunSpec, config: AlbertConfig, plan: BatchPlan, *, head: str,
                   num_labels: int = 2, device: str = "gpu"):
    """memory_plan.MemoryPlan of one rank for this run and batch plan."""
    return memory_plan(config, spec.options.max_seq_length, plan.micro_batch,
                       precision=spec.execution.precision, recompute=spec.batching.recompute,
                       ranks=plan.ranks, accumulation=plan.accumulation,
                       fp16_allreduce=spec.execution.fp16_allreduce,
                       max_predictions=max_predictions(spec),
                       head=head, num_labels=num_labels, device=device)


def max_predictions(spec: RunSpec) -> int:
    """The masked positions per sequence the MLM head gathers: pretraining's option; the other
    heads gather none, and the plan ignores it for them."""
    return getattr(spec.options, "max_predictions_per_seq", 20)


def available_memory_bytes() -> int:
    """Memory the kernel says new processes can use without swapping (MemAvailable, Linux),
    else the physical memory."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def check_batching(batching: Batching) -> None:
    """The batch and memory flags that cannot work, before anything is built."""
    budget = batching.memory_budget_gb
    if budget is not None and not 0 < budget < 1e6:  # also refuses nan and inf
        raise SettingError(f"{{memory_budget_gb}} must be a size in GB above 0, got {budget}",
                           "memory_budget_gb")
    if batching.auto:
        if batching.global_batch_size is None:
            raise SettingError("{per_gpu_batch_size} auto needs {global_batch_size} (the "
                               "sequences per update that the micro-batch and the accumulation "
                               "must make)", "per_gpu_batch_size", "global_batch_size")
        if batching.global_batch_size < 1:
            raise SettingError(f"{{global_batch_size}} must be at least 1, got "
                               f"{batching.global_batch_size}", "global_batch_size")
        if batching.gradient_accumulation_steps is not None:
            raise SettingError("{per_gpu_batch_size} auto chooses the accumulation itself; "
                               "drop {gradient_accumulation_steps}", "per_gpu_batch_size",
                               "gradient_accumulation_steps")


def resolve_auto_batch(spec: RunSpec, ranks: int, config: AlbertConfig, *, head: str,
                       num_labels: int = 2, device: str = "gpu", trial=None,
                       ranks_here: int = 1) -> tuple[Batching, str]:
    """--per_gpu_batch_size auto: choose the largest micro-batch that fits (a divisor of
    --global_batch_size / ranks) and the accumulation that makes the global batch. Returns the
    spec's Batching with both decided, and the log line saying what was chosen and why.

    With --memory_budget_gb, or without `trial`, the memory plan decides against the budget
    (default: this machine's available memory shared by its `ranks_here` ranks). Otherwise
    trial(m) decides (auto_batch.micro_batch_trial: real compiled steps on the GPU). In a run,
    rank 0 calls this through auto_batch.choose_auto_batch, which hands its choice to every
    rank."""
    batching = spec.batching
    check_batching(batching)
    total = batching.global_batch_size
    per_rank = total // ranks if ranks else 0

    def planned(micro):
        return memory_plan_of(spec, config, BatchPlan(ranks, micro, per_rank // micro),
                              head=head, num_labels=num_labels, device=device)

    use_plan = batching.memory_budget_gb is not None or trial is None
    if use_plan:
        if batching.memory_budget_gb is not None:
            budget = batching.memory_budget_gb * GIB
            source = "{memory_budget_gb}"  # marked for PlanError; as a flag in the lines below
        else:
            budget = available_memory_bytes() / ranks_here
            source = f"this machine's available memory / {ranks_here} rank(s) on it"
        keep = f"{(1 - SAFETY_MARGIN) * 100:.0f}% of {budget / GIB:.2f} GB ({source})"

        def fits(micro):
            return plan_fits(planned(micro), budget)

        why_not = f"{keep}: a micro-batch of 1 plans {planned(1).total / GIB:.2f} GB" \
            if per_rank >= 1 and total % ranks == 0 else keep
    else:
        fits = trial
        why_not = "this GPU: a trial step of 2 sequences ran out of memory"
    tried = {}

    def recorded(micro):
        tried[micro] = fits(micro)
        return tried[micro]

    plan = largest_micro_batch(recorded, total, ranks, why=why_not)  # PlanError: a SettingError
    failed = min((m for m, ok in tried.items() if not ok), default=None)
    head_line = (f"--per_gpu_batch_size auto: micro-batch {plan.micro_batch} x accumulation "
                 f"{plan.accumulation} x {ranks} rank(s) = {total}, the largest divisor of "
                 f"{per_rank} sequences per rank")
    if use_plan:
        line = (f"{head_line} whose memory plan ({planned(plan.micro_batch).total / GIB:.2f} GB, "
                f"recompute {batching.recompute}) fits "
                f"{keep.replace('{memory_budget_gb}', '--memory_budget_gb')}")
        if failed:
            line += f"; {failed} would plan {planned(failed).total / GIB:.2f} GB"
    else:
        line = (f"{head_line} for which a trial step of "
                f"{math.ceil(plan.micro_batch * (1 + SAFETY_MARGIN))} sequences (a "
                f"{SAFETY_MARGIN:.0%} margin) ran on this GPU")
        if failed:
            line += f"; {failed} ran out of memory"
    return batching.chosen(plan.micro_batch, plan.accumulation), line


def plan_only_lines(spec: RunSpec, ranks: int, *, head: str, num_labels: int = 2) -> list[str]:
    """--plan_only: the batch plan and the memory plan per GPU (and, for --per_gpu_batch_size
    auto, which the memory plan decides against --memory_budget_gb, why)."""
    config, note = config_for_plan(spec)
    seq = spec.options.max_seq_length
    check_fits(config, seq)
    lines = [note] if note else []
    batching = spec.batching
    check_batching(batching)
    if batching.auto:
        if batching.memory_budget_gb is None:
            raise SettingError("{per_gpu_batch_size} auto with {plan_only} decides from the "
                               "memory plan: give {memory_budget_gb} (the memory of one GPU)",
                               "per_gpu_batch_size", "plan_only", "memory_budget_gb")
        batching, line = resolve_auto_batch(spec, ranks, config, head=head,
                                            num_labels=num_labels)
        lines.append(line)
    plan = batching.plan(ranks)
    lines.append(plan.describe(seq, spec.total_steps))
    memory = memory_plan_of(spec, config, plan, head=head, num_labels=num_labels)
    lines.append(memory.describe())
    if batching.memory_budget_gb is not None and \
            not plan_fits(memory, batching.memory_budget_gb * GIB):
        lines.append(f"warning: this plan does not fit {1 - SAFETY_MARGIN:.0%} of "
                     f"--memory_budget_gb {batching.memory_budget_gb:g}; try --per_gpu_batch_size "
                     "auto or --recompute layers")
    return lines


def print_plan(spec: RunSpec, ranks: int, *, head: str) -> int:
    """--plan_only: plan_only_lines printed, and nothing else run. Its exit status: 0."""
    for line in plan_only_lines(spec, ranks, head=head):
        print(line, flush=True)
    return 0
