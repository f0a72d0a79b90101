"""albert.sagemaker_entry: SageMaker's `--name value` hyperparameters turned back into the
trainer's command line. The launcher's request through it, end to end:
tests/scripts/test_cloud.py."""

import argparse
import importlib
import sys
import types

import pytest

from albert import sagemaker_entry
from albert.sagemaker_entry import boolean_flags, container_argv, normalize


def test_container_entry_restores_flags():
    assert normalize(["--skip_xla", "True", "--total_steps", "10", "--eager", "False",
                      "--config_override", "a=1 b=2"], {"--skip_xla", "--eager"}) == [
        "--skip_xla", "--total_steps", "10", "--config_override", "a=1", "b=2"]


def test_false_is_a_value_unless_the_flag_is_boolean():
    # --val_dir false names a directory; --skip_xla False leaves the flag out, True makes it bare.
    argv = ["--val_dir", "false", "--skip_xla", "False", "--eager", "true", "--seed", "True"]
    assert normalize(argv, {"--skip_xla", "--eager"}) == [
        "--val_dir", "false", "--eager", "--seed", "True"]
    # A flag without a value, or a multi-value flag given nothing, passes as it came.
    assert normalize(["--eager", "--config_override"], {"--eager"}) == [
        "--eager", "--config_override"]


def test_boolean_flags_are_the_trainers_flags_without_a_value():
    from albert import run_squad

    flags = boolean_flags(run_squad)
    assert {"--skip_xla", "--eager", "--plan_only", "--overwrite_output_dir"} <= flags
    assert not {"--train_file", "--total_steps", "--help", "-h"} & flags


def fake_trainer(calls):
    """A trainer module: its parser has one boolean flag; main records what it was given."""
    module = types.ModuleType("albert.fake_trainer")

    def parse_args(argv=None):
        parser = argparse.ArgumentParser()
        parser.add_argument("--skip_xla", action="store_true")
        parser.add_argument("--val_dir")
        return parser.parse_args(argv)

    def main(argv):
        calls.append(argv)
        return 7

    module.parse_args, module.main = parse_args, main
    return module


def test_main_runs_the_trainer_on_the_restored_command_line(monkeypatch):
    calls = []
    monkeypatch.setitem(sys.modules, "albert.fake_trainer", fake_trainer(calls))
    monkeypatch.setattr(sys, "argv", ["train.py", "--skip_xla", "True", "--val_dir", "false"])
    assert sagemaker_entry.main("fake_trainer") == 7
    assert calls == [["--skip_xla", "--val_dir", "false"]]


def test_a_module_whose_parse_args_builds_no_parser_has_no_boolean_flags():
    module = types.ModuleType("no_parser")
    module.parse_args = lambda argv=None: argparse.Namespace()
    assert sagemaker_entry.entry_parser(module) is None
    assert boolean_flags(module) == set()


# -- issue 34 item 2: outputs where the job keeps them; item 9: --verbose ------------------------

MODEL_DIR = "/opt/ml/model"


@pytest.mark.parametrize("trainer", ["run_squad", "run_classifier"])
def test_item2_a_fine_tunes_outputs_default_to_the_jobs_model_directory(trainer):
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


def test_item2_run_pretraining_keeps_its_checkpoints_and_logs_in_the_job_too():
    from albert import run_pretraining

    args = run_pretraining.parse_args(container_argv(["--total_steps", "10"], run_pretraining,
                                                     {"SM_MODEL_DIR": MODEL_DIR}))
    assert (args.checkpoint_dir, args.log_dir) == (f"{MODEL_DIR}/checkpoints",
                                                   f"{MODEL_DIR}/logs")


def test_item9_verbose_is_every_commands_flag_and_its_true_goes(monkeypatch):
    """The launcher passes a bare --verbose as "True"; the entry script turns it back into the
    bare flag, which every command takes (outside its parser), and no stray "True" follows."""
    from albert import run_squad

    assert "--verbose" in boolean_flags(run_squad)
    assert normalize(["--verbose", "True", "--train_file", "t.json"],
                     boolean_flags(run_squad)) == ["--verbose", "--train_file", "t.json"]
    calls = []
    monkeypatch.setitem(sys.modules, "albert.fake_trainer", fake_trainer(calls))
    monkeypatch.setattr(sys, "argv", ["train.py", "--verbose", "True", "--val_dir", "v"])
    assert sagemaker_entry.main("fake_trainer") == 7
    assert calls == [["--verbose", "--val_dir", "v"]]
