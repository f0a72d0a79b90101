"""albert.cli.hyperparameters: a trainer's command line through SageMaker's `name: string`
hyperparameters (encode, the launcher's) and back (decode, the entry script's) must parse to
what the command line itself parses to, whatever its values hold."""

import pytest

from albert import run_pretraining
from albert.cli.hyperparameters import decode, encode
from albert.errors import FlagError


def through_sagemaker(argv, parser=None):
    """`argv` as the container's entry script hands it to the trainer: encoded by the launcher,
    passed by the toolkit as `--name value` pairs, decoded with the trainer's parser."""
    hp, _ = encode(argv, parser)
    passed = [item for key, value in hp.items() for item in (f"--{key}", value)]
    return hp, decode(passed, run_pretraining.build_parser())


@pytest.mark.parametrize("with_parser", [False, True])
def test_values_holding_equals_signs_spaces_quotes_or_nothing_come_back_as_given(with_parser):
    """Issue 50: a `--flag=value` whose value holds "=" (a config override, an S3 key with a
    Hive partition) is split at its first "=" only; a value with spaces or quotes, or an
    empty one, reaches the trainer as it was typed."""
    argv = ["--config_override=hidden_size=64", "--train_dir=s3://b/year=2024/x",
            "--val_dir", "my data/val=1 'q' \"dq\"", "--spm_model=",
            "--model_config", "", "--total_steps=8", "--skip_xla"]
    parser = run_pretraining.build_parser()
    hp, decoded = through_sagemaker(argv, parser if with_parser else None)
    assert hp == {"config_override": "hidden_size=64",
                  "train_dir": "s3://b/year=2024/x", "val_dir": "my data/val=1 'q' \"dq\"",
                  "spm_model": "", "model_config": "", "total_steps": "8", "skip_xla": "True"}
    assert vars(parser.parse_args(decoded)) == vars(run_pretraining.build_parser().parse_args(
        argv))
    args = parser.parse_args(decoded)
    assert args.config_override == ["hidden_size=64"]
    assert args.train_dir == "s3://b/year=2024/x"


@pytest.mark.parametrize("argv, message", [
    (["--config_override", "hidden_act=gelu new"],
     "--config_override value 'hidden_act=gelu new': a SageMaker hyperparameter passes this "
     "flag's values as one string split at spaces, so each value must be one word"),
    (["--config_override", ""], "--config_override value '': a SageMaker hyperparameter"),
    (["--train_dir", "a", "b"], "--train_dir takes one value, got 2: 'a' 'b'"),
])
def test_with_the_trainers_parser_what_decode_cannot_give_back_is_refused(argv, message):
    """Decode splits a multi-value flag's string at spaces and passes a one-value flag's as
    one: a value that would come back otherwise (split, dropped, or two files joined into one
    name) is refused, naming the flag and the value, not changed in silence."""
    with pytest.raises(FlagError) as refused:
        encode(argv, run_pretraining.build_parser())
    assert str(refused.value).startswith(message) and "\n" not in str(refused.value)
    # Without the parser the launcher could not load, encode cannot tell: it passes them on.
    assert encode(argv)[0]


@pytest.mark.parametrize("item", ["--", "--=x"])
def test_a_flag_without_a_name_is_refused(item):
    """A second `--` (the launcher takes the first as the start of the trainer's flags) or
    `--=x` is no hyperparameter name."""
    with pytest.raises(FlagError, match=f"unexpected argument '{item}': training flags are "):
        encode(["--total_steps", "8", item, "--seed", "1"])
