"""The batch plan: how the global batch splits over ranks, micro-batches and accumulation.

    global batch = per-GPU micro-batch x accumulation steps x ranks

Given --global_batch_size and --per_gpu_batch_size, the accumulation is derived (as NVIDIA's
BERT scripts do); given all three, they must agree; given the global batch and the accumulation,
the micro-batch is derived. Nothing is silently ignored: a combination that does not divide is an
error naming the flags. largest_micro_batch picks the plan for --per_gpu_batch_size auto from a
test of what fits (albert.train.memory decides what that test is).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from albert.errors import SettingError

# The settings a PlanError may name (the Batching fields, the flags of the same names): each
# message marks those it names, and names no other.
BATCH_SETTINGS = ("per_gpu_batch_size", "global_batch_size", "gradient_accumulation_steps",
                  "memory_budget_gb", "recompute", "precision", "max_seq_length")


class PlanError(SettingError):
    """Batch settings that cannot be satisfied; the message names them (marked as
    SettingError's are, among BATCH_SETTINGS)."""

    def __init__(self, message: str, *settings):
        super().__init__(message, *(settings or BATCH_SETTINGS))


@dataclass(frozen=True)
class BatchPlan:
    ranks: int
    micro_batch: int
    accumulation: int

    @property
    def global_batch(self) -> int:
        return self.ranks * self.micro_batch * self.accumulation

    def describe(self, seq_length: int, total_steps: int | None = None) -> str:
        text = (f"batch plan: {self.micro_batch} x {self.accumulation} x {self.ranks} = "
                f"{self.global_batch} (per-GPU micro-batch x accumulation steps x ranks = "
                f"sequences per update); {self.global_batch * seq_length:,} tokens per update at "
                f"sequence length {seq_length}")
        if total_steps:
            text += (f"; {total_steps:,} updates = {self.global_batch * total_steps:,} "
                     f"sequences in all")
        return text

    def as_dict(self) -> dict:
        return {"ranks": self.ranks, "micro_batch": self.micro_batch,
                "accumulation": self.accumulation, "global_batch": self.global_batch}


def resolve_batch_plan(ranks: int, per_gpu: int | None, global_batch: int | None,
                       accumulation: int | None, default_micro_batch: int) -> BatchPlan:
    """The plan from per_gpu_batch_size, global_batch_size and gradient_accumulation_steps
    (None where not given) for `ranks` processes."""
    for setting, value in (("per_gpu_batch_size", per_gpu), ("global_batch_size", global_batch),
                           ("gradient_accumulation_steps", accumulation)):
        if value is not None and value < 1:
            raise PlanError(f"{{{setting}}} must be at least 1, got {value}", setting)
    if global_batch is None:
        return BatchPlan(ranks, per_gpu or default_micro_batch, accumulation or 1)
    if per_gpu is not None and accumulation is not None:
        if per_gpu * accumulation * ranks != global_batch:
            raise PlanError(
                f"{{global_batch_size}} {global_batch} disagrees with {{per_gpu_batch_size}} "
                f"{per_gpu} x {{gradient_accumulation_steps}} {accumulation} x {ranks} rank(s) = "
                f"{per_gpu * accumulation * ranks}; give two of the three")
        return BatchPlan(ranks, per_gpu, accumulation)
    if accumulation is not None:
        micro, rest = divmod(global_batch, ranks * accumulation)
        if rest or micro < 1:
            raise PlanError(f"{{global_batch_size}} {global_batch} is not divisible by {ranks} "
                            f"rank(s) x {{gradient_accumulation_steps}} {accumulation}")
        return BatchPlan(ranks, micro, accumulation)
    micro = per_gpu or default_micro_batch
    accumulation, rest = divmod(global_batch, ranks * micro)
    if rest or accumulation < 1:
        given = "{per_gpu_batch_size}" if per_gpu else "the default per-GPU batch"
        raise PlanError(f"{{global_batch_size}} {global_batch} is not a multiple of {given} "
                        f"{micro} x {ranks} rank(s); choose sizes where micro-batch x ranks "
                        f"divides the global batch")
    return BatchPlan(ranks, micro, accumulation)


def largest_micro_batch(fits, global_batch: int, ranks: int, why: str) -> BatchPlan:
    """The batch plan with the largest micro-batch m that `fits(m)` and makes --global_batch_size
    exactly (m x accumulation x ranks); m runs over the divisors of global_batch / ranks, bisected
    (fits is taken to be monotone: what fits at m fits below m). `why` names the budget in the
    error when not even one sequence fits."""
    per_rank, rest = divmod(global_batch, ranks)
    if rest or per_rank < 1:
        raise PlanError(f"{{global_batch_size}} {global_batch} is not divisible by {ranks} "
                        "rank(s), so no micro-batch makes it exactly")
    divisors = _divisors(per_rank)
    lo, hi, best = 0, len(divisors) - 1, None
    while lo <= hi:
        mid = (lo + hi) // 2
        if fits(divisors[mid]):
            best, lo = divisors[mid], mid + 1
        else:
            hi = mid - 1
    if best is None:
        raise PlanError(f"{{per_gpu_batch_size}} auto: not even a micro-batch of 1 fits {why}; "
                        "try {recompute} layers, {precision} bf16 or a shorter {max_seq_length}")
    return BatchPlan(ranks, best, per_rank // best)


def _divisors(n: int) -> list[int]:
    """The divisors of n, ascending, found up to its square root (n may be a large batch)."""
    small = [d for d in range(1, math.isqrt(n) + 1) if n % d == 0]
    return small + [n // d for d in reversed(small) if d * d != n]
