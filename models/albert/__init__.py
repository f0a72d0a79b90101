"""ALBERT for TensorFlow 2 / Keras 3: pretraining (MLM + SOP) and SQuAD fine-tuning.

    from albert import AlbertConfig, AlbertForPreTraining, AlbertForQuestionAnswering
"""

import os as _os

# Keras 3 must run on TensorFlow here (Horovod, tf.data, XLA); set before keras is imported.
_os.environ.setdefault("KERAS_BACKEND", "tensorflow")

from albert.config import PRESETS, AlbertConfig  # noqa: E402
from albert.convert import CheckpointError  # noqa: E402
from albert.modeling import (  # noqa: E402
    AlbertForPreTraining,
    AlbertForQuestionAnswering,
    AlbertModel,
)

__all__ = [
    "PRESETS",
    "AlbertConfig",
    "AlbertForPreTraining",
    "AlbertForQuestionAnswering",
    "AlbertModel",
    "CheckpointError",
]
__version__ = "0.1.0"
