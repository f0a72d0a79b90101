"""Run a trainer from SageMaker's hyperparameters (used by docker/sagemaker/*.py).

The SageMaker training toolkit passes each hyperparameter as `--name value`, all strings. The
launcher encodes a bare flag (--skip_xla) as "True", which is turned back only for the trainer's
boolean flags (and --verbose, which every command takes); multi-value flags arrive as one
space-separated string. This turns them back into the command line the trainers parse.

What a job writes outside the places SageMaker keeps is lost with its container. So in a job
(SM_MODEL_DIR set) the trainer's outputs go to SM_MODEL_DIR (/opt/ml/model, uploaded to the
job's S3 output as model.tar.gz when the job ends): a fine-tuner's --output_dir left out is
SM_MODEL_DIR itself (its results, logs, and checkpoints and final/ unless the launcher's
--checkpoint_s3_uri put them in /opt/ml/checkpoints); run_pretraining's --checkpoint_dir and
--log_dir left out are its checkpoints/ and logs/; an output path given relative lies under it.
An absolute path (the FSx channel, /opt/ml/checkpoints) is used as given.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from unittest import mock

MULTI_VALUE = {"--config_override"}
TRUE, FALSE = ("True", "true"), ("False", "false")
# The flags that name where a trainer writes (a fine-tuner's directories other than
# --output_dir default to places under it, None here, and follow it).
OUTPUT_FLAGS = ("--output_dir", "--checkpoint_dir", "--log_dir", "--cache_dir", "--export_dir")


class _Parser(Exception):
    def __init__(self, parser):
        self.parser = parser


def entry_parser(module) -> argparse.ArgumentParser | None:
    """The ArgumentParser that `module.parse_args` builds, caught before it parses anything."""
    def capture(self, *args, **kwargs):
        raise _Parser(self)

    with mock.patch.object(argparse.ArgumentParser, "parse_known_args", capture):
        try:
            module.parse_args([])
        except _Parser as found:
            return found.parser
    return None


def boolean_flags(module) -> set[str]:
    """The option strings of `module`'s parser that take no value (store_true, store_false):
    the only flags whose "True"/"False" stands for the flag's presence. Any other flag's
    "false" is its value (--val_dir false is a directory named false, not "no validation")."""
    parser = entry_parser(module)
    if parser is None:
        return set()
    # --verbose: every command takes it (albert.cli.flags.quiet_argv), outside its parser.
    return {"--verbose"} | {option for action in parser._actions
                            if action.nargs == 0 and not isinstance(
                                action, (argparse._HelpAction, argparse._VersionAction))
                            for option in action.option_strings}


def normalize(argv: list[str], booleans: set[str]) -> list[str]:
    """SageMaker's `--name value` pairs -> the trainer's command line: a flag of `booleans`
    (see boolean_flags) with "True" is the bare flag, with "False" left out; a multi-value flag
    split on spaces; everything else as given."""
    out, i = [], 0
    while i < len(argv):
        item = argv[i]
        value = argv[i + 1] if i + 1 < len(argv) and not argv[i + 1].startswith("--") else None
        if item in booleans and value in TRUE:
            out.append(item)
            i += 2
        elif item in booleans and value in FALSE:
            i += 2
        elif item in MULTI_VALUE and value is not None:
            out.extend([item, *value.split()])
            i += 2
        else:
            out.append(item)
            i += 1
    return out


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
    parser = entry_parser(module)
    if not model_dir or parser is None:
        return argv
    out = list(argv)
    for flag in OUTPUT_FLAGS:
        action = parser._option_string_actions.get(flag)
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
    """The trainer's command line from the toolkit's `--name value` pairs in a job: normalize,
    then job_outputs."""
    return job_outputs(normalize(argv, boolean_flags(module)), module, environ)


def main(trainer: str) -> int:
    module = importlib.import_module(f"albert.{trainer}")
    return module.main(container_argv(sys.argv[1:], module))
