"""LAMB and AdamW as in the LAMB paper and the BERT/ALBERT recipe, and the warmup +
polynomial-decay schedule.

Written here instead of using keras.optimizers.Lamb because the recipe differs from it in ways that
change training: weight decay added to the update *before* the trust ratio, and LayerNorm/bias
parameters excluded from both weight decay and layer adaptation. For each parameter w with gradient
g at update t = 1, 2, ... (all element-wise except the norms):

    m = b1 m + (1 - b1) g              v = b2 v + (1 - b2) g^2
    m^ = m / (1 - b1^t)                v^ = v / (1 - b2^t)      (bias correction)
    u = m^ / (sqrt(v^) + eps) + wd * w   (wd = 0 for excluded parameters)
    r = ||w|| / ||u|| if both norms > 0 else 1    (LAMB only; r = 1 for excluded parameters)
    w = w - lr * r * u

AdamW is the same with r = 1 everywhere (torch.optim.AdamW's update, whose decoupled decay
w (1 - lr wd) is the same lr * wd * w). Bias correction is on by default, as in the LAMB paper,
NVIDIA's and tensorflow-addons' LAMB and every AdamW: without it the first few hundred updates
are up to sqrt(1 - b2^t) / (1 - b1^t) ~ 3x larger, which makes fine-tuning from scratch at a
high learning rate collapse. bias_correction=False is Google's TF1 BERT/ALBERT optimizer
(m^ = m, v^ = v), for reproducing its recipe.
"""

from __future__ import annotations

import re

import tensorflow as tf

from albert.errors import SettingError

# Matched against Keras variable paths, e.g. "albert/encoder/group_0_layer_0/ffn_norm/gamma".
DEFAULT_EXCLUDE = ("norm", "LayerNorm", "bias", "beta", "gamma")


def _excluded(name: str, patterns) -> bool:
    return any(re.search(p, name) for p in patterns)


class LayerwiseAdam(tf.Module):
    """LAMB (layer_adaptation=True) or AdamW (False) over a fixed list of variables.

    Slots are plain tf.Variables created up front, so a tf.train.Checkpoint of this module holds
    the whole optimizer state and Horovod can broadcast it before the first update.
    """

    def __init__(self, variables, *, layer_adaptation: bool = True, weight_decay: float = 0.01,
                 beta_1: float = 0.9, beta_2: float = 0.999, epsilon: float = 1e-6,
                 exclude_from_weight_decay=DEFAULT_EXCLUDE,
                 exclude_from_layer_adaptation=None, bias_correction: bool = True,
                 name: str = "lamb"):
        super().__init__(name=name)
        self.layer_adaptation = layer_adaptation
        self.bias_correction = bias_correction
        self.weight_decay = weight_decay
        self.beta_1, self.beta_2, self.epsilon = beta_1, beta_2, epsilon
        if exclude_from_layer_adaptation is None:
            exclude_from_layer_adaptation = exclude_from_weight_decay
        self.names = [_var_name(v) for v in variables]
        self.decay = [not _excluded(n, exclude_from_weight_decay) for n in self.names]
        self.adapt = [layer_adaptation and not _excluded(n, exclude_from_layer_adaptation)
                      for n in self.names]
        with tf.name_scope(name):
            self.m = [tf.Variable(tf.zeros(v.shape, tf.float32), trainable=False,
                                  name=f"m_{i}") for i, v in enumerate(variables)]
            self.v = [tf.Variable(tf.zeros(v.shape, tf.float32), trainable=False,
                                  name=f"v_{i}") for i, v in enumerate(variables)]
            # The updates the moments have seen: t of the bias correction. The optimizer's own
            # count, not the trainer's step, because --load_optimizer_state carries the moments
            # (and so their count) into a run whose step starts at 0.
            self.updates = tf.Variable(0, dtype=tf.int64, trainable=False, name="updates")

    @property
    def slot_variables(self):
        return self.m + self.v + [self.updates]

    def moments_only(self) -> tf.Module:
        """A view holding m and v alone, in this optimizer's checkpoint layout: what checkpoints
        written before the update count existed hold (see albert.train.checkpoint_store)."""
        view = tf.Module()
        view.m, view.v = self.m, self.v
        return view

    def apply(self, grads, variables, learning_rate):
        """One update; grads and variables in the order given at construction."""
        lr = tf.cast(learning_rate, tf.float32)
        t = tf.cast(self.updates.assign_add(1), tf.float32)
        if self.bias_correction:
            m_scale = 1.0 / (1.0 - tf.pow(self.beta_1, t))
            v_scale = 1.0 / (1.0 - tf.pow(self.beta_2, t))
        for i, (g, w) in enumerate(zip(grads, variables, strict=True)):
            g = tf.cast(g, tf.float32)
            m = self.m[i].assign(self.beta_1 * self.m[i] + (1.0 - self.beta_1) * g)
            v = self.v[i].assign(self.beta_2 * self.v[i] + (1.0 - self.beta_2) * tf.square(g))
            if self.bias_correction:
                m, v = m * m_scale, v * v_scale
            w_value = tf.convert_to_tensor(w)
            update = m / (tf.sqrt(v) + self.epsilon)
            if self.decay[i] and self.weight_decay:
                update += self.weight_decay * w_value
            ratio = 1.0
            if self.adapt[i]:
                w_norm = tf.norm(w_value)
                u_norm = tf.norm(update)
                ratio = tf.where((w_norm > 0) & (u_norm > 0), w_norm / u_norm, 1.0)
            w.assign_sub(lr * ratio * update)


def _var_name(variable) -> str:
    return getattr(variable, "path", None) or variable.name


def make_optimizer(name: str, variables, weight_decay: float = 0.01, *,
                   bias_correction: bool = True, **kwargs) -> LayerwiseAdam:
    kwargs["bias_correction"] = bias_correction
    if name == "lamb":
        return LayerwiseAdam(variables, layer_adaptation=True, weight_decay=weight_decay,
                             name="lamb", **kwargs)
    if name == "adamw":
        return LayerwiseAdam(variables, layer_adaptation=False, weight_decay=weight_decay,
                             name="adamw", **kwargs)
    raise SettingError(f"{{name}} must be lamb or adamw, got {name!r}", ("name", "optimizer"))


def schedule(optimization, total_steps: int):
    """step -> learning rate: learning_rate_at with the values of `optimization` (a run spec's
    train.run_spec.Optimization)."""
    o = optimization
    warmup = o.warmup(total_steps)

    def at(step):
        return learning_rate_at(step, o.learning_rate, warmup, total_steps, o.end_learning_rate,
                                o.decay_power, o.lr_decay)
    return at


def learning_rate_at(step, peak: float, warmup_steps: int, total_steps: int,
                     end_learning_rate: float = 0.0, power: float = 1.0,
                     decay: str = "from_warmup"):
    """The learning rate of the update made at `step` (applied updates so far, from 0).

    Warmup: linear from peak / warmup_steps at step 0 to peak at step warmup_steps - 1 (counting
    updates 1..W, so the first update is not wasted at rate 0 as in transformers' and Google's
    schedules).
    Decay, (1 - progress)^power from peak to end_learning_rate:
      from_warmup (transformers' get_polynomial_decay_schedule_with_warmup):
          progress = (step - W) / (total_steps - W)
      from_zero (Google BERT/ALBERT's polynomial_decay, warmup overriding the first W steps):
          progress = step / total_steps
    Either way the last update (step = total_steps - 1) still moves the weights (for power 1:
    peak / (total_steps - W), or peak / total_steps), as in both references; only updates past
    total_steps get end_learning_rate.
    """
    if decay not in ("from_warmup", "from_zero"):
        raise SettingError(f"{{decay}} must be from_warmup or from_zero, got {decay!r}",
                           ("decay", "lr_decay"))
    step = tf.cast(step, tf.float32)
    warmup = tf.cast(max(warmup_steps, 0), tf.float32)
    if decay == "from_warmup":
        progress = (step - warmup) / tf.cast(max(total_steps - warmup_steps, 1), tf.float32)
    else:
        progress = step / tf.cast(max(total_steps, 1), tf.float32)
    progress = tf.clip_by_value(progress, 0.0, 1.0)
    decayed = (peak - end_learning_rate) * tf.pow(1.0 - progress, power) + end_learning_rate
    if warmup_steps > 0:
        return tf.where(step < warmup, peak * (step + 1.0) / warmup, decayed)
    return decayed
