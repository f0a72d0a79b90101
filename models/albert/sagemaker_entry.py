"""Run a trainer from SageMaker's hyperparameters (used by docker/sagemaker/*.py).

The SageMaker training toolkit passes each hyperparameter as `--name value`, all strings. The
launcher encodes a bare flag (--skip_xla) as "True"; multi-value flags arrive as one
space-separated string. This turns them back into the command line the trainers parse.
"""

from __future__ import annotations

import importlib
import sys

MULTI_VALUE = {"--config_override"}


def normalize(argv: list[str]) -> list[str]:
    out, i = [], 0
    while i < len(argv):
        item = argv[i]
        value = argv[i + 1] if i + 1 < len(argv) and not argv[i + 1].startswith("--") else None
        if item.startswith("--") and value in ("True", "true"):
            out.append(item)
            i += 2
        elif item.startswith("--") and value in ("False", "false"):
            i += 2
        elif item in MULTI_VALUE and value is not None:
            out.extend([item, *value.split()])
            i += 2
        else:
            out.append(item)
            i += 1
    return out


def main(trainer: str) -> int:
    module = importlib.import_module(f"albert.{trainer}")
    return module.main(normalize(sys.argv[1:]))
