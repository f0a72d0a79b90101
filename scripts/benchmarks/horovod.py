"""--horovod N: weak scaling, the step's sequences per second under horovodrun with 1 and with
N processes, each a fresh run of scripts/benchmark.py."""

from __future__ import annotations

import os
import sys

from benchmarks.relaunch import drop_flag, rerun


def bench_horovod(args, argv) -> dict:
    """Weak scaling: the same per-rank batch on 1 and N ranks. The re-runs time the step alone
    (transformers' step and the reader measure one process, not the ranks)."""
    horovodrun = os.path.join(os.path.dirname(sys.executable), "horovodrun")
    inner = [a for a in argv if a not in ("--compare_hf",)]
    inner = drop_flag(drop_flag(inner, "--horovod"), "--input_pipeline")
    results = {}
    for n in (1, args.horovod):
        launcher = (horovodrun, "-np", str(n), "--gloo", "-H", f"localhost:{n}")
        results[n] = rerun(inner, launcher)["seq_per_sec"]
    n = args.horovod
    return {"scaling": {"processes": [1, n], "seq_per_sec": [results[1], results[n]],
                        "weak_scaling_efficiency": results[n] / (n * results[1])}}
