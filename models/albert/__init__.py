"""ALBERT for TensorFlow 2 / Keras 3: pretraining (MLM + SOP), SQuAD and sequence-classification
fine-tuning.

    from albert import AlbertConfig, AlbertForPreTraining, AlbertForQuestionAnswering
    from albert import load_pretrained, save_pretrained

Names are imported lazily: the data tools (and their worker processes) import `albert.*` modules
without paying for TensorFlow.
"""

import importlib
import os as _os

# Keras 3 must run on TensorFlow here (Horovod, tf.data, XLA); set before keras is imported.
_os.environ.setdefault("KERAS_BACKEND", "tensorflow")
# TensorFlow's default CPU allocator hands large buffers back to the system, so every step faults
# them in again: on a 2-core AMD EPYC the demo's pretraining spent a quarter of its CPU time in the
# kernel (16.5M page faults in 500 updates). The BFC allocator keeps and reuses them: 1.5x the
# updates per second, the same losses to the digit. Set before TensorFlow makes its first tensor;
# a value the user set wins.
_os.environ.setdefault("TF_CPU_ALLOCATOR_USE_BFC", "true")

_EXPORTS = {
    "PRESETS": "albert.model.config",
    "AlbertConfig": "albert.model.config",
    "AlbertError": "albert.errors",
    "CheckpointError": "albert.errors",
    "AlbertModel": "albert.model.modeling",
    "AlbertForPreTraining": "albert.model.modeling",
    "AlbertForQuestionAnswering": "albert.model.modeling",
    "AlbertForSequenceClassification": "albert.model.modeling",
    "load_pretrained": "albert.io.pretrained",
    "save_pretrained": "albert.io.pretrained",
}
__all__ = sorted(_EXPORTS)
__version__ = "0.1.0"


def __getattr__(name):
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'albert' has no attribute {name!r}")


def __dir__():
    return __all__
