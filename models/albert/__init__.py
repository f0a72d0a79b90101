"""ALBERT for TensorFlow 2 / Keras 3: pretraining (MLM + SOP), SQuAD and sequence-classification
fine-tuning.

    from albert import AlbertConfig, AlbertForPreTraining, AlbertForQuestionAnswering
    from albert import load_pretrained, save_pretrained

Names are imported lazily: the data tools (and their worker processes) import `albert.*` modules
without paying for TensorFlow.
"""

import os as _os

# Keras 3 must run on TensorFlow here (the model, Horovod, tf.data and XLA are TensorFlow's): set
# before keras is imported, where the user chose no backend, or a ~/.keras/keras.json naming
# another would make every model fail on its first TensorFlow op. Speed settings (the CPU
# allocator) are the commands' (albert.cli.quiet_start), not a library import's.
_os.environ.setdefault("KERAS_BACKEND", "tensorflow")

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
    # Each module only when one of its names is first asked for (lazily: see the docstring).
    module = _EXPORTS.get(name)
    if module == "albert.model.config":
        from albert.model import config as found  # lazily
    elif module == "albert.errors":
        from albert import errors as found  # lazily
    elif module == "albert.model.modeling":
        from albert.model import modeling as found  # lazily
    elif module == "albert.io.pretrained":
        from albert.io import pretrained as found  # lazily
    else:
        raise AttributeError(f"module 'albert' has no attribute {name!r}")
    return getattr(found, name)


def __dir__():
    return __all__
