"""A command line as SageMaker hyperparameters and back. A training job's hyperparameters are
`name: string` pairs, which the SageMaker training toolkit hands to the entry script as `--name
value`. So the launcher (scripts/launch_sagemaker.py) encodes a trainer's flags (encode): a
flag's values joined by spaces, a bare flag (--skip_xla) as "True". The container's entry script
(albert.sagemaker_entry) decodes them with the trainer's own parser (decode): "True"/"False"
stand for a flag's presence only where the flag takes no value, and a value is split on spaces
only where the flag takes several (its nargs). Both sides read the same parser, so no list of
flags is kept by hand."""

from __future__ import annotations

import argparse

from albert.errors import FlagError

TRUE, FALSE = ("True", "true"), ("False", "false")


def encode(argv: list[str], parser=None) -> tuple[dict[str, str], set[str]]:
    """`--name value...` flags -> ({name: value}, the names given without a value). A flag's
    values are joined by spaces; one without a value is "True" (which only a flag that takes
    none may be: the caller checks the names returned against the trainer's parser). With the
    trainer's `parser`, what decode could not give back as it was is refused (FlagError): a
    multi-value flag's value holding a space (decode splits it there), several values for a
    flag that takes one (decode would pass them as one)."""
    hp: dict[str, str] = {}
    bare: set[str] = set()
    multi = multi_value_flags(parser) if parser is not None else set()
    single = _single_value_flags(parser) if parser is not None else set()
    i = 0
    while i < len(argv):
        item = argv[i]
        if not item.startswith("--") or item == "--" or item.startswith("--="):
            raise FlagError(f"unexpected argument {item!r}: training flags are --name value")
        key, values = item[2:], []
        if "=" in key:
            key, value = key.split("=", 1)  # the first "=": a value may hold more (a=b, k=v/x)
            values = [value]
        else:
            while i + 1 < len(argv) and not argv[i + 1].startswith("--"):
                values.append(argv[i + 1])
                i += 1
            if not values:
                bare.add(key)
        flag = f"--{key}"
        if flag in multi and any(len(v.split()) != 1 for v in values):
            raise FlagError(f"{flag} value {next(v for v in values if len(v.split()) != 1)!r}: "
                            "a SageMaker hyperparameter passes this flag's values as one string "
                            "split at spaces, so each value must be one word without spaces")
        if flag in single and len(values) > 1:
            raise FlagError(f"{flag} takes one value, got {len(values)}: "
                            f"{' '.join(map(repr, values))}")
        hp[key] = " ".join(values) if values else "True"
        i += 1
    return hp, bare


def boolean_flags(parser) -> set[str]:
    """The option strings of `parser` (an albert.cli.flags.Parser) that take no value
    (store_true, store_false; --verbose, which every parser has, among them): the only flags
    whose "True"/"False" stands for the flag's presence. Any other flag's "false" is its value
    (--val_dir false is a directory named false, not "no validation")."""
    # --help and --version take no value either, but hold none (their default is SUPPRESS).
    return {option for action in parser.actions()
            if action.nargs == 0 and action.default is not argparse.SUPPRESS
            for option in action.option_strings}


def multi_value_flags(parser) -> set[str]:
    """The option strings of `parser` that take several values (nargs *, + or a count over
    one): what arrives as one space-separated string."""
    return {option for action in parser.actions()
            if action.nargs in (argparse.ZERO_OR_MORE, argparse.ONE_OR_MORE)
            or (isinstance(action.nargs, int) and action.nargs > 1)
            for option in action.option_strings}


def _single_value_flags(parser) -> set[str]:
    """The option strings of `parser` that take one value (nargs None or "?")."""
    return {option for action in parser.actions() if action.nargs in (None, argparse.OPTIONAL)
            for option in action.option_strings}


def decode(argv: list[str], parser) -> list[str]:
    """SageMaker's `--name value` pairs -> the command line `parser` parses: a flag of
    boolean_flags with "True" is the bare flag, with "False" left out; a multi-value flag's
    value split on spaces; everything else as given."""
    booleans, multi = boolean_flags(parser), multi_value_flags(parser)
    out, i = [], 0
    while i < len(argv):
        item = argv[i]
        value = argv[i + 1] if i + 1 < len(argv) and not argv[i + 1].startswith("--") else None
        if item in booleans and value in TRUE:
            out.append(item)
            i += 2
        elif item in booleans and value in FALSE:
            i += 2
        elif item in multi and value is not None:
            out.extend([item, *value.split()])
            i += 2
        else:
            out.append(item)
            i += 1
    return out
