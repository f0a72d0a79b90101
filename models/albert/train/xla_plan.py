"""Which of the two step functions XLA compiles (--xla auto|on|off), and why.

The plan is decided once per run: rank 0 decides, every rank uses its choice, and the run record
(run.json's "xla", written as the run starts: albert.train.run_dir.start_state) keeps it, so a
resumed run compiles as the run it continues did instead of re-running a timing probe that can
fall the other way on a busy host.
"""

from __future__ import annotations

import functools
import logging
import time
from typing import NamedTuple

import tensorflow as tf

from albert.errors import SettingError
from albert.train.precision import COMPUTE_DTYPES

XLA_MODES = ("auto", "on", "off")


@functools.cache
def _matmul_chain(dtype, jit: bool, n: int, chain: int):
    a = tf.cast(tf.random.normal((n, n)), dtype)
    scale = tf.cast(1.0 / n, dtype)

    @tf.function(jit_compile=jit)
    def chain_fn(x):
        for _ in range(chain):
            x = tf.matmul(x, a) * scale
        return x

    chain_fn(a).numpy()  # compile and warm up
    return chain_fn, a


def matmul_flops(dtype, jit: bool, n: int = 1024, chain: int = 10, repeats: int = 3) -> float:
    """Best-of-`repeats` FLOP/s of a chain of n x n matmuls, by TensorFlow's kernels (oneDNN on
    x86 CPUs, cuBLAS on GPUs) or, with jit, by XLA's."""
    chain_fn, a = _matmul_chain(dtype, jit, n, chain)
    best = 0.0
    for _ in range(repeats):
        start = time.perf_counter()
        chain_fn(a).numpy()
        best = max(best, chain * 2 * n ** 3 / (time.perf_counter() - start))
    return best


class XlaPlan(NamedTuple):
    """Which of the two step functions XLA compiles, and why (for the log line). eager: neither
    is even traced (--eager, for debugging)."""
    gradient: bool
    update: bool
    reason: str
    eager: bool = False

    def describe(self) -> str:
        return (f"XLA gradient {'on' if self.gradient else 'off'}, update "
                f"{'on' if self.update else 'off'} ({self.reason})")


XLA_ON = XlaPlan(True, True, "both step functions compiled")
EAGER = XlaPlan(False, False, "--eager", eager=True)


def choose_xla(mode: str, precision: str, dist=None, recorded: dict | None = None) -> XlaPlan:
    """--xla on/off compile both functions or neither. auto compiles the update always (it is
    elementwise work that XLA fuses) and the gradient wherever XLA's matmuls are the fast ones:
    on a GPU always; on a CPU only when XLA's matmul beats TensorFlow's oneDNN kernel in a ~3 s
    probe. The probe is what decides because the answer is per CPU: oneDNN won on an AVX-512
    Xeon (2.48 vs 2.18 seq/s ALBERT-base fp32; bf16 2x, as oneDNN's bf16 matmul ran at 450-540
    GFLOP/s and XLA's at 160-210), XLA's matmul won on an AMD EPYC.

    recorded: the plan a resumed run started with ({"gradient", "update", "reason"}); auto then
    reuses it without probing. Rank 0 decides and every rank uses its choice."""
    if mode not in XLA_MODES:
        raise SettingError(f"{{mode}} must be one of {XLA_MODES}, got {mode!r}", ("mode", "xla"))
    if mode != "auto":
        on = mode == "on"
        return XlaPlan(on, on, f"--xla {mode}")
    if tf.config.list_physical_devices("GPU"):
        return XlaPlan(True, True, "auto: GPU")
    plan = None
    if dist is None or dist.is_chief:
        if recorded:
            plan = XlaPlan(bool(recorded["gradient"]), bool(recorded["update"]),
                           f"auto, as recorded when this run started: {recorded['reason']}")
        else:
            plan = _probe(precision)
    if dist is not None and dist.size > 1:
        plan = XlaPlan(*dist.allgather_object(tuple(plan) if plan else None)[0])
    return plan


def _probe(precision: str) -> XlaPlan:
    dtype = COMPUTE_DTYPES[precision]
    xla = onednn = 0.0
    for _ in range(4):  # interleaved, best of each: a shared host's speed drifts
        xla = max(xla, matmul_flops(dtype, True, repeats=2))
        onednn = max(onednn, matmul_flops(dtype, False, repeats=2))
    return XlaPlan(xla > onednn, True,
                   f"auto: CPU {dtype.name} matmul {xla / 1e9:.0f} GFLOP/s under XLA, "
                   f"{onednn / 1e9:.0f} GFLOP/s by TensorFlow's kernels")


def plan_for_run(execution, dist, recorded: dict | None = None) -> XlaPlan:
    """The plan of a run (execution: run_spec.Execution); `recorded`: the plan of the run being
    resumed, which an auto plan keeps (a changed one is logged)."""
    if execution.eager:
        return EAGER
    plan = choose_xla(execution.xla, execution.precision, dist, recorded=recorded)
    if recorded and (plan.gradient, plan.update) != (recorded["gradient"], recorded["update"]):
        logging.getLogger("albert.train.xla_plan").warning(
            "this command changes the run's XLA plan: it started with gradient %s, update %s; "
            "now %s", recorded["gradient"], recorded["update"], plan.describe())
    return plan
