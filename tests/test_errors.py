"""The error family (albert.errors): every error class a user sees is an AlbertError, one
CheckpointError, no message naming a flag is a plain ValueError. How the tools answer the family
(cli.flags.user_errors: one line and exit status 2, a plain ValueError keeps its traceback):
tests/cli/test_flags.py, tests/test_squad_eval.py."""

import ast
import importlib
import os
import pickle

import pytest
from helpers import run_in_process

import albert
from albert import errors
from albert.errors import (
    AlbertError,
    CheckpointError,
    DataError,
    FlagError,
    OutputError,
    SettingError,
)

PACKAGE = os.path.dirname(albert.__file__)


# Modules whose flag checks another part of issue 27 converts: remove each from here once its
# errors are the family's.
PENDING = set()


def _modules():
    """(module name, parsed source) of every module of the package, but PENDING's."""
    for root, _, names in os.walk(PACKAGE):
        for name in sorted(names):
            if name.endswith(".py"):
                path = os.path.join(root, name)
                dotted = os.path.relpath(path[:-3], os.path.dirname(PACKAGE)).replace(os.sep, ".")
                module = dotted.removesuffix(".__init__")
                if module not in PENDING:
                    with open(path, encoding="utf-8") as f:
                        yield module, ast.parse(f.read(), path)


def test_every_error_class_is_an_albert_error():
    """Each class named *Error in the package (plan.PlanError, data.squad.SquadError,
    squad_metrics.ScoringInputError, ...) belongs to the family, whatever its second base."""
    found = {}
    for module, tree in _modules():
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef) and node.name.endswith("Error"):
                found[f"{module}.{node.name}"] = getattr(importlib.import_module(module),
                                                         node.name)
    assert {"albert.errors.FlagError", "albert.train.batch_plan.PlanError",
            "albert.data.classification.ClassificationDataError"} <= set(found)
    outside = [name for name, cls in found.items() if not issubclass(cls, AlbertError)]
    assert outside == []
    # The names callers caught before the family still catch them.
    for name in ("FlagError", "ConfigError", "CheckpointError", "DataError"):
        assert issubclass(getattr(errors, name), ValueError)
    assert issubclass(OutputError, OSError)


def test_no_flag_message_is_a_plain_value_error():
    """A message that names a flag is a user's error: a plain ValueError would reach the user
    as a traceback now that user_errors lets ValueError through."""
    def names_flag(node):
        first = node.exc.args[0] if node.exc.args else None
        if isinstance(first, ast.JoinedStr) and first.values:
            first = first.values[0]
        return isinstance(first, ast.Constant) and str(first.value).startswith("--")

    plain = [f"{module}:{node.lineno}" for module, tree in _modules() for node in ast.walk(tree)
             if isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call)
             and getattr(node.exc.func, "id", None) == "ValueError" and names_flag(node)]
    assert plain == []


def test_one_checkpoint_error():
    from albert.data import reader
    from albert.io import pretrained

    assert albert.CheckpointError is pretrained.CheckpointError
    assert albert.CheckpointError is CheckpointError
    assert albert.AlbertError is AlbertError
    assert {"AlbertError", "CheckpointError"} <= set(albert.__all__)
    assert reader.DataError is DataError


# -- issue 52: a library's mistake named as the library spells it, a command's as its flag --------


def test_a_setting_error_names_the_setting_and_the_command_line_its_flag():
    """SettingError: str() names each marked setting bare, on_command_line() as its flag (a
    (name, flag) pair where they differ); braces in a value stay; both spellings survive a
    pickle (a rank's error sent to the others). FlagError is the one the command line raises,
    its message spelled in flags already."""
    e = SettingError("{accum_steps} must be >= 1, got {0}; see {overwrite}",
                     ("accum_steps", "gradient_accumulation_steps"), "overwrite")
    assert (e.setting, str(e)) == ("accum_steps", "accum_steps must be >= 1, got {0}; see "
                                                  "overwrite")
    assert e.on_command_line() == ("--gradient_accumulation_steps must be >= 1, got {0}; see "
                                   "--overwrite")
    again = pickle.loads(pickle.dumps(e))
    assert (type(again), str(again), again.on_command_line()) == (
        SettingError, str(e), e.on_command_line())
    flag = FlagError("--total_steps must be at least 1, got 0")
    assert isinstance(flag, SettingError) and issubclass(SettingError, (AlbertError, ValueError))
    assert str(flag) == flag.on_command_line() == "--total_steps must be at least 1, got 0"


def test_a_library_call_names_the_setting_and_the_same_mistake_on_the_command_line_its_flag(
        sample_corpus, sample_vocab, tmp_path):
    """InstanceOptions (albert.data.pretraining) refuses max_seq_length 4 as the library spells
    it; create_pretraining_data --max_seq_length 4 says the same line with the flag."""
    from albert.data.pretraining import InstanceOptions

    with pytest.raises(SettingError) as refused:
        InstanceOptions(max_seq_length=4).validate()
    assert str(refused.value) == "max_seq_length must be at least 8, got 4"
    assert refused.value.setting == "max_seq_length"
    assert not isinstance(refused.value, FlagError)

    code, out, err = run_in_process("create_pretraining_data", [
        "--input", sample_corpus, "--spm_model", sample_vocab, "--output_dir",
        tmp_path / "records", "--max_seq_length", "4", "--no_progress"])
    assert (code, out) == (2, "")
    assert err.splitlines()[-1] == "error: --max_seq_length must be at least 8, got 4"
    assert not (tmp_path / "records").exists()
