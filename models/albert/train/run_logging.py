"""What a run reports: one line per log step on stdout, a JSON-lines file, TensorBoard scalars."""

from __future__ import annotations

import json
import math
import os
import time

import tensorflow as tf


class MetricsLogger:
    """Rank 0 writes; other ranks' calls are no-ops."""

    def __init__(self, log_dir: str | None, dist):
        self.enabled = dist.is_chief
        self.writer = None
        self.jsonl = None
        if self.enabled and log_dir:
            os.makedirs(log_dir, exist_ok=True)
            self.writer = tf.summary.create_file_writer(log_dir)
            self.jsonl = open(os.path.join(log_dir, "metrics.jsonl"), "a", encoding="utf-8")

    def log(self, prefix: str, step: int, values: dict) -> None:
        if not self.enabled:
            return
        parts = " ".join(_fmt(k, v) for k, v in values.items())
        print(f"{prefix} step {step} {parts}", flush=True)
        if self.jsonl is not None:
            record = {"split": prefix, "step": step, "time": time.time(), **values}
            self.jsonl.write(json.dumps(record) + "\n")
            self.jsonl.flush()
        if self.writer is not None:
            with self.writer.as_default(step=step):
                for k, v in values.items():
                    if isinstance(v, int | float) and math.isfinite(v):
                        tf.summary.scalar(f"{prefix}/{k}", v)
            self.writer.flush()

    def close(self):
        if self.writer is not None:
            self.writer.close()
        if self.jsonl is not None:
            self.jsonl.close()


def _fmt(key, value):
    if isinstance(value, float):
        return f"{key} {value:.4g}" if abs(value) < 1e4 else f"{key} {value:.1f}"
    return f"{key} {value}"
