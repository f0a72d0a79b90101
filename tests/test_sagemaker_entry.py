"""albert.sagemaker_entry: SageMaker's `--name value` hyperparameters turned back into the
trainer's command line. The launcher's request through it, end to end:
tests/scripts/test_cloud.py."""

import argparse
import sys
import types

from albert import sagemaker_entry
from albert.sagemaker_entry import boolean_flags, normalize


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
