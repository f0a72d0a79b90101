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
An absolute path (the FSx channel, /opt/ml/checkpoints) is used as given. A relative path that
climbs out of SM_MODEL_DIR (../x), or a URL (s3://...), is refused: exit status 2, one line.
"""

from __future__ import annotations

import os
import re
import sys

from albert import run_classifier, run_pretraining, run_squad
from albert.cli.hyperparameters import decode
from albert.errors import FlagError

# The trainers a job runs, by the name its entry script gives (docker/sagemaker/<name>.py): each
# imports what computes only in its run(), so a bad hyperparameter is answered before TensorFlow.
TRAINERS = {"run_pretraining": run_pretraining, "run_squad": run_squad,
            "run_classifier": run_classifier}

# The flags that name where a trainer writes (a fine-tuner's directories other than
# --output_dir default to places under it, None here, and follow it).
OUTPUT_FLAGS = ("--output_dir", "--checkpoint_dir", "--log_dir", "--cache_dir", "--export_dir")


# A URL scheme (s3://, gs://, file://): where a job needs a local path, it names none.
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://")


def _output_flag(token: str, parser, actions: dict) -> str | None:
    """The output flag (of OUTPUT_FLAGS) that `token` sets as `parser` reads it: its own
    spelling, an old one (albert.cli.flags.Renamed) or, where the parser takes them, the one
    spelling it abbreviates; None for any other token."""
    name = token.split("=", 1)[0]
    action = actions.get(name)
    if action is None and parser.allow_abbrev:
        matches = [option for option in actions if option.startswith(name)]
        action = actions[matches[0]] if len(matches) == 1 else None  # more: argparse refuses
    if action is None:
        return None
    return next((flag for flag in OUTPUT_FLAGS if actions.get(flag) is action), None)


def job_path(flag: str, value: str, model_dir: str,
             inputs: str = "/opt/ml/input/data/<channel>") -> str:
    """Where a job writes `flag`'s `value`: a relative path under `model_dir` (uploaded when the
    job ends), an absolute one (an input channel, /opt/ml/checkpoints) as given. A URL, or a
    relative path that climbs out of `model_dir`, would be written where nothing is kept (or
    nowhere the user meant): FlagError, naming the flag, the value and what is expected
    (`inputs`: the input channel's path, where the caller knows it)."""
    channel = f"or an absolute one on an input channel ({inputs}/...)"
    if _URL.match(value):
        s3 = (" (S3 checkpoints: the launcher's --checkpoint_s3_uri syncs /opt/ml/checkpoints "
              "with a prefix)" if flag == "--checkpoint_dir" else "")
        raise FlagError(f"{flag} {value} is a URL, where a SageMaker job needs a local path: "
                        f"give a relative one (under the job's model directory {model_dir}, "
                        f"uploaded when the job ends), {channel}{s3}")
    if os.path.isabs(value):
        return value
    if os.path.normpath(value).split(os.sep)[0] == "..":
        raise FlagError(f"{flag} {value} leaves the job's model directory ({model_dir}), where "
                        f"nothing is kept: give a path below it (uploaded when the job ends), "
                        f"{channel}")
    return os.path.join(model_dir, value)


def job_outputs(argv: list[str], module, environ=None) -> list[str]:
    """`argv` (the trainer's command line) with its outputs where a SageMaker job keeps them
    (see the module's docstring; job_path refuses what would be lost); unchanged outside a job
    (no SM_MODEL_DIR)."""
    environ = os.environ if environ is None else environ
    model_dir = environ.get("SM_MODEL_DIR")
    if not model_dir:
        return argv
    parser = module.build_parser()
    actions = parser.option_actions()
    out, given = list(argv), set()
    i = 0
    # Every occurrence is placed (argparse keeps the last one); after "--" nothing is a flag.
    while i < len(out) and out[i] != "--":
        flag = _output_flag(out[i], parser, actions) if out[i].startswith("--") else None
        if flag is None:
            i += 1
            continue
        given.add(flag)
        if "=" in out[i]:
            name, value = out[i].split("=", 1)
            if value:
                out[i] = f"{name}={job_path(flag, value, model_dir)}"
        elif i + 1 < len(out) and out[i + 1] and not out[i + 1].startswith("--"):
            i += 1
            out[i] = job_path(flag, out[i], model_dir)
        i += 1
    for flag in OUTPUT_FLAGS:
        action = actions.get(flag)
        if action is None or flag in given:
            continue
        default = action.default
        if isinstance(default, str) and not os.path.isabs(default):
            # runs/squad -> SM_MODEL_DIR; runs/pretraining/checkpoints -> .../checkpoints
            out += [flag, model_dir if flag == "--output_dir"
                    else os.path.join(model_dir, os.path.basename(default))]
    return out


def container_argv(argv: list[str], module, environ=None) -> list[str]:
    """The trainer's command line from the toolkit's `--name value` pairs in a job: decoded
    with the trainer's parser (albert.cli.hyperparameters.decode), then job_outputs."""
    return job_outputs(decode(argv, module.build_parser()), module, environ)


def main(trainer: str) -> int:
    """Run albert.<trainer> (one of TRAINERS) in this process on the job's command line; its exit
    status is the job's, unchanged (an interrupted run's non-zero status tells SageMaker it did
    not finish)."""
    module = TRAINERS[trainer]
    try:
        argv = container_argv(sys.argv[1:], module)
    except FlagError as e:
        print(f"error: {e}", file=sys.stderr, flush=True)
        return 2
    return module.main(argv)
