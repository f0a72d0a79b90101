"""Run a trainer from SageMaker's hyperparameters (used by docker/sagemaker/*.py).

The SageMaker training toolkit passes each hyperparameter as `--name value`, all strings. The
launcher encodes a bare flag (--skip_xla) as "True", which is turned back only for the trainer's
boolean flags; multi-value flags arrive as one space-separated string. This turns them back into
the command line the trainers parse.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from unittest import mock

MULTI_VALUE = {"--config_override"}
TRUE, FALSE = ("True", "true"), ("False", "false")


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
    return {option for action in parser._actions
            if action.nargs == 0 and not isinstance(action, (argparse._HelpAction,
                                                             argparse._VersionAction))
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


def main(trainer: str) -> int:
    module = importlib.import_module(f"albert.{trainer}")
    return module.main(normalize(sys.argv[1:], boolean_flags(module)))
