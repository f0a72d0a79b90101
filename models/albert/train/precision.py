"""--precision: the Keras dtype policy and the compute dtype it implies."""

from __future__ import annotations

import keras
import tensorflow as tf

from albert.errors import SettingError

PRECISIONS = ("fp32", "fp16", "bf16")
COMPUTE_DTYPES = {"fp32": tf.float32, "fp16": tf.float16, "bf16": tf.bfloat16}


def set_precision(precision: str) -> None:
    """Set the Keras dtype policy; call before building the model."""
    policy = {"fp32": "float32", "fp16": "mixed_float16", "bf16": "mixed_bfloat16"}.get(precision)
    if policy is None:
        raise SettingError(f"{{precision}} must be one of {PRECISIONS}, got {precision!r}",
                           "precision")
    keras.mixed_precision.set_global_policy(policy)
