"""albert.sagemaker_entry and albert.cli.hyperparameters: a trainer's command line as
SageMaker's `--name value` hyperparameters and back. The launcher's request through them, end to
end: tests/scripts/test_cloud.py."""

import importlib
import os
import runpy
import sys
import types

import pytest
from helpers import REPO_ROOT

from albert import sagemaker_entry
from albert.cli.flags import Parser
from albert.cli.hyperparameters import boolean_flags, decode, encode, multi_value_flags
from albert.sagemaker_entry import container_argv


def small_parser():
    """Two boolean flags, one multi-value flag, three that take one value."""
    p = Parser()
    p.add_argument("--skip_xla", action="store_true")
    p.add_argument("--eager", action="store_true")
    p.add_argument("--config_override", nargs="*", default=[])
    for name in ("--total_steps", "--seed", "--val_dir"):
        p.add_argument(name)
    return p


def test_container_entry_restores_flags():
    assert decode(["--skip_xla", "True", "--total_steps", "10", "--eager", "False",
                   "--config_override", "a=1 b=2"], small_parser()) == [
        "--skip_xla", "--total_steps", "10", "--config_override", "a=1", "b=2"]


def test_false_is_a_value_unless_the_flag_is_boolean():
    # --val_dir false names a directory; --skip_xla False leaves the flag out, True makes it bare.
    argv = ["--val_dir", "false", "--skip_xla", "False", "--eager", "true", "--seed", "True"]
    assert decode(argv, small_parser()) == ["--val_dir", "false", "--eager", "--seed", "True"]
    # A flag without a value, or a multi-value flag given nothing, passes as it came.
    assert decode(["--eager", "--config_override"], small_parser()) == [
        "--eager", "--config_override"]


def test_boolean_flags_are_the_trainers_flags_without_a_value():
    from albert import run_squad

    flags = boolean_flags(run_squad.build_parser())
    assert {"--skip_xla", "--eager", "--plan_only", "--overwrite_output_dir"} <= flags
    assert not {"--train_file", "--total_steps", "--help", "-h"} & flags


def test_multi_value_flags_are_read_from_each_flags_nargs():
    """No list kept by hand: a flag that takes several values (nargs *, + or a count) is split,
    one that takes one is not, whatever its name."""
    from albert import run_squad

    p = small_parser()
    p.add_argument("--layers", nargs="+")
    p.add_argument("--pair", nargs=2)
    p.add_argument("--maybe", nargs="?")
    assert multi_value_flags(p) == {"--config_override", "--layers", "--pair"}
    assert decode(["--layers", "1 2 3", "--seed", "4 5"], p) == [
        "--layers", "1", "2", "3", "--seed", "4 5"]
    assert multi_value_flags(run_squad.build_parser()) == {"--config_override"}


@pytest.mark.parametrize("trainer, argv", [
    ("run_squad", ["--train_file", "t.json", "--skip_xla", "--config_override", "a=1", "b=2",
                   "--max_seq_length", "128", "--eager"]),
    ("run_pretraining", ["--total_steps", "10", "--val_dir", "false", "--plan_only"]),
    ("run_classifier", ["--train_file=t.tsv", "--labels", "a,b", "--no_header"]),
])
def test_encoded_hyperparameters_decode_to_the_command_line_the_trainer_parses_alike(trainer,
                                                                                     argv):
    """The launcher's encoding, as SageMaker passes it, decoded by the entry script: the
    trainer parses what it would have parsed from the command line itself."""
    module = importlib.import_module(f"albert.{trainer}")
    hp, bare = encode(argv)
    assert all(isinstance(value, str) for value in hp.values())
    assert bare <= {flag[2:] for flag in boolean_flags(module.build_parser())}
    passed = [item for key, value in hp.items() for item in (f"--{key}", value)]
    assert vars(module.parse_args(decode(passed, module.build_parser()))) == vars(
        module.parse_args(argv))


def test_encode_refuses_what_is_not_a_flag():
    from albert.errors import FlagError

    with pytest.raises(FlagError, match="unexpected argument 'x': training flags are --name"):
        encode(["x", "--seed", "1"])


def fake_trainer(calls):
    """A trainer module: its parser has one boolean flag; main records what it was given."""
    module = types.ModuleType("albert.fake_trainer")

    def build_parser():
        parser = Parser()
        parser.add_argument("--skip_xla", action="store_true")
        parser.add_argument("--val_dir")
        return parser

    def main(argv):
        calls.append(argv)
        return 7

    module.build_parser, module.main = build_parser, main
    return module


def test_main_runs_the_trainer_on_the_restored_command_line(monkeypatch):
    calls = []
    monkeypatch.setitem(sagemaker_entry.TRAINERS, "fake_trainer", fake_trainer(calls))
    monkeypatch.setattr(sys, "argv", ["train.py", "--skip_xla", "True", "--val_dir", "false"])
    assert sagemaker_entry.main("fake_trainer") == 7
    assert calls == [["--skip_xla", "--val_dir", "false"]]


def test_every_entry_script_runs_a_trainer_of_the_table():
    """docker/sagemaker/<name>.py runs main("<name>"): each names a trainer of TRAINERS, the
    module albert.<name> itself, and the table holds no other."""
    folder = os.path.join(REPO_ROOT, "docker", "sagemaker")
    scripts = sorted(name.removesuffix(".py") for name in os.listdir(folder)
                     if name.endswith(".py"))
    assert scripts == sorted(sagemaker_entry.TRAINERS)
    for name in scripts:
        with open(os.path.join(folder, f"{name}.py"), encoding="utf-8") as f:
            assert f'main("{name}")' in f.read()
        assert sagemaker_entry.TRAINERS[name] is importlib.import_module(f"albert.{name}")


# -- issue 34 item 2: outputs where the job keeps them; item 9: --verbose ------------------------

MODEL_DIR = "/opt/ml/model"


@pytest.mark.parametrize("trainer", ["run_squad", "run_classifier"])
def test_a_fine_tunes_outputs_default_to_the_jobs_model_directory(trainer):
    """In a SageMaker job a fine-tuner's --output_dir left out is SM_MODEL_DIR (uploaded when
    the job ends), with its checkpoints, logs and cache under it; a relative output path lies
    under it; an absolute one (the FSx channel, the launcher's /opt/ml/checkpoints) stays."""
    module = importlib.import_module(f"albert.{trainer}")
    data = ["--train_file", "t.json"]
    env = {"SM_MODEL_DIR": MODEL_DIR, "SM_OUTPUT_DATA_DIR": "/opt/ml/output/data"}
    args = module.parse_args(container_argv(data, module, env))
    assert args.output_dir == MODEL_DIR
    assert (args.checkpoint_dir, args.log_dir, args.cache_dir) == (
        f"{MODEL_DIR}/checkpoints", f"{MODEL_DIR}/logs", f"{MODEL_DIR}/cache")
    argv = container_argv([*data, "--export_dir", "serving/1", "--checkpoint_dir",
                           "/opt/ml/checkpoints", "--log_dir=logs/ft", "--output_dir",
                           "/opt/ml/input/data/fsx/runs/ft"], module, env)
    args = module.parse_args(argv)
    assert args.export_dir == f"{MODEL_DIR}/serving/1"
    assert args.checkpoint_dir == "/opt/ml/checkpoints"
    assert args.log_dir == f"{MODEL_DIR}/logs/ft"
    assert args.output_dir == "/opt/ml/input/data/fsx/runs/ft"
    # Outside a job: the command line as given.
    assert container_argv([*data, "--export_dir", "serving/1"], module, {}) == [
        *data, "--export_dir", "serving/1"]


def test_run_pretraining_keeps_its_checkpoints_and_logs_in_the_jobs_model_directory():
    from albert import run_pretraining

    args = run_pretraining.parse_args(container_argv(["--total_steps", "10"], run_pretraining,
                                                     {"SM_MODEL_DIR": MODEL_DIR}))
    assert (args.checkpoint_dir, args.log_dir) == (f"{MODEL_DIR}/checkpoints",
                                                   f"{MODEL_DIR}/logs")


def test_the_entry_turns_verbose_true_back_into_the_bare_flag(monkeypatch):
    """The launcher passes a bare --verbose as "True"; the entry script turns it back into the
    bare flag, which every command's parser takes, and no stray "True" follows."""
    from albert import run_squad

    assert "--verbose" in boolean_flags(run_squad.build_parser())
    assert decode(["--verbose", "True", "--train_file", "t.json"],
                  run_squad.build_parser()) == ["--verbose", "--train_file", "t.json"]
    calls = []
    monkeypatch.setitem(sagemaker_entry.TRAINERS, "fake_trainer", fake_trainer(calls))
    monkeypatch.setattr(sys, "argv", ["train.py", "--verbose", "True", "--val_dir", "v"])
    assert sagemaker_entry.main("fake_trainer") == 7
    assert calls == [["--verbose", "--val_dir", "v"]]


# -- issue 50 item 11: outputs a job would lose; the trainer's exit status -----------------------

ENTRY_SCRIPT = os.path.join(REPO_ROOT, "docker", "sagemaker", "run_squad.py")


def run_entry_script(argv, monkeypatch, trainer_main):
    """docker/sagemaker/run_squad.py run in this process as the toolkit runs it (`python
    run_squad.py --name value ...` in a job), with albert.run_squad's main replaced by
    `trainer_main`: its exit status."""
    from albert import run_squad

    monkeypatch.setattr(run_squad, "main", trainer_main)
    monkeypatch.setattr(sys, "argv", [ENTRY_SCRIPT, *argv])
    monkeypatch.setenv("SM_MODEL_DIR", MODEL_DIR)
    with pytest.raises(SystemExit) as exited:
        runpy.run_path(ENTRY_SCRIPT, run_name="__main__")
    return exited.value.code


@pytest.mark.parametrize("argv, line", [
    (["--output_dir", "../escape"],
     "error: --output_dir ../escape leaves the job's model directory (/opt/ml/model), where "
     "nothing is kept: give a path below it (uploaded when the job ends), or an absolute one "
     "on an input channel (/opt/ml/input/data/<channel>/...)"),
    (["--log_dir=logs/../../x"], "error: --log_dir logs/../../x leaves the job's model "),
    # argparse keeps a flag's last value: every one is checked, not only the first.
    (["--output_dir", "ft", "--output_dir", "../escape"], "error: --output_dir ../escape leaves"),
    # An abbreviation argparse reads as --export_dir is --export_dir.
    (["--export", "../../srv"], "error: --export_dir ../../srv leaves the job's model "),
    (["--checkpoint_dir", "s3://b/c"],
     "error: --checkpoint_dir s3://b/c is a URL, where a SageMaker job needs a local path: give "
     "a relative one (under the job's model directory /opt/ml/model, uploaded when the job "
     "ends), or an absolute one on an input channel (/opt/ml/input/data/<channel>/...) (S3 "
     "checkpoints: the launcher's --checkpoint_s3_uri syncs /opt/ml/checkpoints with a prefix)"),
    (["--output_dir=gs://b/out"], "error: --output_dir gs://b/out is a URL, where a SageMaker "),
])
def test_the_entry_refuses_an_output_the_job_would_lose(argv, line, monkeypatch, capsys):
    """Issue 50 item 11: --output_dir ../escape was /opt/ml/model/../escape (never uploaded),
    --checkpoint_dir s3://b/c a local /opt/ml/model/s3://b/c. In the container, however the
    job was started: one line naming the flag, the value and what is expected, exit 2, and
    the trainer never runs."""
    calls = []
    code = run_entry_script(["--train_file", "t.json", *argv], monkeypatch,
                            lambda argv: calls.append(argv) or 0)
    out, err = capsys.readouterr()
    assert (code, calls, out) == (2, [], "")
    assert err.startswith(line) and err.endswith("\n") and len(err.splitlines()) == 1, err


def test_outputs_the_job_keeps_still_go_to_the_trainer(monkeypatch):
    """What the job keeps passes: relative paths under the model directory (each occurrence,
    an abbreviation too), absolute ones as given."""
    calls = []
    assert run_entry_script(
        ["--train_file", "t.json", "--output_dir", "a/../ft", "--export", "serving/1",
         "--checkpoint_dir=/opt/ml/checkpoints", "--log_dir", "/opt/ml/input/data/fsx/logs"],
        monkeypatch, lambda argv: calls.append(argv) or 0) == 0
    assert calls == [["--train_file", "t.json", "--output_dir", f"{MODEL_DIR}/a/../ft",
                      "--export", f"{MODEL_DIR}/serving/1",
                      "--checkpoint_dir=/opt/ml/checkpoints", "--log_dir",
                      "/opt/ml/input/data/fsx/logs"]]


@pytest.mark.parametrize("status", [0, 1, 2, 143])
@pytest.mark.parametrize("how", ["returned", "raised"])
def test_the_entry_exits_with_the_trainers_status_unchanged(status, how, monkeypatch):
    """An interrupted run exits non-zero (143, resumable): SageMaker must see that status,
    not a finished job's 0, whether the trainer returns it or exits with it."""
    def trainer_main(argv):
        if how == "raised":
            sys.exit(status)
        return status

    assert run_entry_script(["--train_file", "t.json"], monkeypatch, trainer_main) == status
