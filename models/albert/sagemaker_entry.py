"""Run a trainer from SageMaker's hyperparameters (used by docker/sagemaker/*.py).

The SageMaker training toolkit passes each hyperparameter as `--name value`, all strings, as the
launcher encoded them (albert.cli.hyperparameters): this turns them back into the command line
the trainer parses, with the trainer's own parser (build_parser).

What a job writes outside the places SageMaker keeps is lost with its container. So in a job
(SM_MODEL_DIR set) the trainer's outputs go to SM_MODEL_DIR (/opt/ml/model, uploaded to the
job's S3 output as model.tar.gz when the job ends): a fine-tuner's --output_dir left out is
SM_MODEL_DIR itself (its results, logs, and checkpoints and final/ unless the launcher's
--checkpoint_s3_uri put them in /opt/ml/checkpoints); run_pretraining's --checkpoint_dir and
--log_dir left out are its checkpoints/ and logs/; an output path given relative lies under it.
An absolute path (the FSx channel, /opt/ml/checkpoints) is used as given.
"""

from __future__ import annotations

import importlib
import os
import sys

from albert.cli.hyperparameters import decode

# The flags that name where a trainer writes (a fine-tuner's directories other than
# --output_dir default to places under it, None here, and follow it).
OUTPUT_FLAGS = ("--output_dir", "--checkpoint_dir", "--log_dir", "--cache_dir", "--export_dir")


def _given(argv: list[str], flag: str) -> int | None:
    """The index of `flag`'s value in argv (--flag value or --flag=value), None if absent."""
    for i, item in enumerate(argv):
        if item == flag and i + 1 < len(argv):
            return i + 1
        if item.startswith(flag + "="):
            return i
    return None


def job_outputs(argv: list[str], module, environ=None) -> list[str]:
    """`argv` (the trainer's command line) with its outputs where a SageMaker job keeps them
    (see the module's docstring); unchanged outside a job (no SM_MODEL_DIR)."""
    environ = os.environ if environ is None else environ
    model_dir = environ.get("SM_MODEL_DIR")
    if not model_dir:
        return argv
    actions = module.build_parser().option_actions()
    out = list(argv)
    for flag in OUTPUT_FLAGS:
        action = actions.get(flag)
        if action is None:
            continue
        at = _given(out, flag)
        if at is None:
            default = action.default
            if isinstance(default, str) and not os.path.isabs(default):
                # runs/squad -> SM_MODEL_DIR; runs/pretraining/checkpoints -> .../checkpoints
                out += [flag, model_dir if flag == "--output_dir"
                        else os.path.join(model_dir, os.path.basename(default))]
            continue
        value = out[at][len(flag) + 1:] if out[at].startswith(flag + "=") else out[at]
        if value and not os.path.isabs(value):
            out[at] = (f"{flag}=" if out[at].startswith(flag + "=") else "") + os.path.join(
                model_dir, value)
    return out


def container_argv(argv: list[str], module, environ=None) -> list[str]:
    """The trainer's command line from the toolkit's `--name value` pairs in a job: decoded
    with the trainer's parser (albert.cli.hyperparameters.decode), then job_outputs."""
    return job_outputs(decode(argv, module.build_parser()), module, environ)


def main(trainer: str) -> int:
    module = importlib.import_module(f"albert.{trainer}")
    return module.main(container_argv(sys.argv[1:], module))
