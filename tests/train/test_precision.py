"""--precision (albert.train.precision): the Keras dtype policy each name sets, the compute dtype
it implies, and a name it does not know refused naming the flag."""

import keras
import pytest
import tensorflow as tf

from albert.errors import SettingError
from albert.train.precision import COMPUTE_DTYPES, PRECISIONS, set_precision


@pytest.mark.parametrize("precision, policy, compute", [
    ("fp32", "float32", tf.float32), ("fp16", "mixed_float16", tf.float16),
    ("bf16", "mixed_bfloat16", tf.bfloat16)])
def test_each_precision_sets_its_policy_and_compute_dtype(precision, policy, compute):
    set_precision(precision)
    global_policy = keras.mixed_precision.global_policy()
    assert global_policy.name == policy
    assert global_policy.compute_dtype == compute.name == COMPUTE_DTYPES[precision].name
    assert global_policy.variable_dtype == "float32"  # the weights stay float32
    # A layer built now computes in that dtype.
    out = keras.layers.Dense(2)(tf.ones((1, 3)))
    assert out.dtype == compute


def test_every_named_precision_has_a_compute_dtype():
    assert set(PRECISIONS) == set(COMPUTE_DTYPES)


@pytest.mark.parametrize("bad", ["fp8", "float16", "", "FP16"])
def test_an_unknown_precision_is_refused_naming_the_flag_and_keeps_the_policy(bad):
    set_precision("bf16")
    with pytest.raises(SettingError, match=r"^precision must be one of \('fp32', 'fp16', "
                                           rf"'bf16'\), got {bad!r}"):
        set_precision(bad)
    assert keras.mixed_precision.global_policy().name == "mixed_bfloat16"
