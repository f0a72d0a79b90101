"""albert.cli.resolve: a runner's parsed flags checked and resolved in this process: the flag that
cannot work named, relative data files under --filesystem_prefix, the directories a fine-tuner
puts under --output_dir, the vocabulary and the feature settings an evaluation-only run takes
from its model."""

import argparse

import pytest

from albert.cli import resolve
from albert.errors import FlagError
from albert.io.task_card import write_task_card


def test_fine_tuners_read_relative_files_under_the_filesystem_prefix(tmp_path):
    # The SageMaker launcher sets --filesystem_prefix to the FSx channel and passes data files
    # relative to it (as run_pretraining's --train_dir).
    from albert import run_classifier, run_squad

    squad = run_squad.parse_args(["--filesystem_prefix", "/fsx", "--train_file",
                                  "squad/train.json", "--predict_file", "/abs/dev.json"])
    assert (squad.train_file, squad.predict_file) == ("/fsx/squad/train.json", "/abs/dev.json")
    glue = run_classifier.parse_args(["--filesystem_prefix", "/fsx", "--train_file", "sst2/t.tsv",
                                      "--eval_file", "sst2/d.tsv", "--output_dir",
                                      str(tmp_path / "out")])
    assert (glue.train_file, glue.eval_file) == ("/fsx/sst2/t.tsv", "/fsx/sst2/d.tsv")
    assert glue.checkpoint_dir == str(tmp_path / "out" / "checkpoints")
    local = run_squad.parse_args(["--train_file", "squad/train.json"])
    assert local.train_file == "squad/train.json"


def squad_args(tmp_path, *argv):
    """run_squad's parsed flags (resolve_paths applied), every flag at its default but these."""
    from albert import run_squad

    return run_squad.parse_args(["--train_file", "train.json", "--output_dir",
                                 str(tmp_path / "out"), *argv])


@pytest.mark.parametrize("flags", [
    {},  # every default
    {"total_steps": 1, "keep_checkpoints": 1, "max_seq_length": 8, "warmup_steps": 0,
     "doc_stride": 1, "n_best_size": 1, "checkpoint_frequency": 0, "log_frequency": 1},
    {"learning_rate": 0.0, "max_grad_norm": 0.0, "weight_decay": 0.0},
    {"warmup_proportion": 0.0},
    {"warmup_proportion": 1.0},
    {"total_steps": 10, "warmup_steps": 10},
    {"num_train_epochs": 0.01},
    {"load_from": "checkpoint", "load_optimizer_state": True},
])
def test_the_defaults_and_each_value_at_its_limit_pass_the_checks(flags, tmp_path):
    """The checks refuse past a limit, never at it (the refusals: the next test): the defaults,
    each count at its minimum, a warmup proportion of 0 or 1, warmup over every update."""
    args = squad_args(tmp_path)
    for name, value in flags.items():
        assert hasattr(args, name), f"run_squad takes no --{name}"
        setattr(args, name, value)
    assert resolve.check_training_flags(args) is None
    assert {name: getattr(args, name) for name in flags} == flags  # checked, not rewritten


@pytest.mark.parametrize("flags, message", [
    ({"total_steps": 0}, "--total_steps must be at least 1, got 0"),
    ({"keep_checkpoints": 0}, "--keep_checkpoints must be at least 1, got 0"),
    ({"max_seq_length": 4}, "--max_seq_length must be at least 8, got 4"),
    ({"learning_rate": -1e-5}, "--learning_rate must be at least 0.0, got -1e-05"),
    ({"num_train_epochs": 0.0}, "--num_train_epochs must be above 0, got 0.0"),
    ({"warmup_proportion": 1.5}, "--warmup_proportion must be within [0, 1], got 1.5"),
    ({"total_steps": 10, "warmup_steps": 20}, "--warmup_steps (20) exceeds --total_steps (10)"),
    ({"load_optimizer_state": True}, "--load_optimizer_state needs --load_from checkpoint"),
    # nan passes every bound (issue 50 item 8: it started the run, which trained on NaN).
    ({"learning_rate": float("nan")}, "--learning_rate must be a finite number, got nan"),
    ({"max_grad_norm": float("inf")}, "--max_grad_norm must be a finite number, got inf"),
    ({"null_score_diff_threshold": float("-inf")},
     "--null_score_diff_threshold must be a finite number, got -inf"),
])
def test_check_training_flags_names_the_flag_that_cannot_work(flags, message, tmp_path):
    args = squad_args(tmp_path)
    for name, value in flags.items():
        setattr(args, name, value)
    with pytest.raises(FlagError) as refused:
        resolve.check_training_flags(args)
    assert str(refused.value) == message


def test_a_directory_flag_naming_a_file_is_refused(tmp_path):
    (tmp_path / "logs").write_text("not a directory")
    args = squad_args(tmp_path, "--log_dir", str(tmp_path / "logs"))
    with pytest.raises(FlagError, match=r"--log_dir .*logs is a file; expected a directory"):
        resolve.check_training_flags(args)


def paths(**flags):
    base = dict(filesystem_prefix=".", train_file=None, eval_file=None, predict_file=None,
                output_dir="out", checkpoint_dir=None, log_dir=None, cache_dir=None,
                overwrite_output_dir=False, overwrite_checkpoint_dir=False)
    args = argparse.Namespace(**{**base, **flags})
    as_parsed = vars(args).copy()
    resolved = resolve.resolve_paths(args)
    assert vars(args) == as_parsed  # the parsed flags stay as parsed
    return resolved


def test_resolve_paths_puts_relative_files_under_the_prefix_and_directories_under_output():
    args = paths(filesystem_prefix="/fsx", train_file="squad/train.json",
                 predict_file="/data/dev.json", log_dir="/elsewhere/logs")
    assert (args.train_file, args.predict_file) == ("/fsx/squad/train.json", "/data/dev.json")
    assert (args.checkpoint_dir, args.cache_dir) == ("out/checkpoints", "out/cache")
    assert args.log_dir == "/elsewhere/logs"  # given: kept
    # Without a prefix a relative file stays relative (to the working directory).
    assert paths(train_file="squad/train.json").train_file == "squad/train.json"


def test_overwrite_output_dir_discards_a_checkpoint_dir_elsewhere_only_when_asked(tmp_path):
    out = str(tmp_path / "out")
    inside = paths(output_dir=out, overwrite_output_dir=True)
    assert inside.overwrite_checkpoint_dir is True
    elsewhere = str(tmp_path / "ckpt")
    with pytest.raises(FlagError, match="lies elsewhere: add --overwrite_checkpoint_dir"):
        paths(output_dir=out, checkpoint_dir=elsewhere, overwrite_output_dir=True)
    both = paths(output_dir=out, checkpoint_dir=elsewhere, overwrite_output_dir=True,
                 overwrite_checkpoint_dir=True)
    assert both.overwrite_checkpoint_dir is True


def model_args(**flags):
    base = dict(spm_model=None, load_from="pretrained", checkpoint_path=None,
                checkpoint_dir=None, train_file=None)
    return argparse.Namespace(**{**base, **flags})


def test_tokenizer_path_finds_the_vocabulary_that_comes_with_the_model(tmp_path):
    model = tmp_path / "model"
    (model / "assets").mkdir(parents=True)
    (model / "assets" / "spiece.model").write_bytes(b"spm")
    assert resolve.tokenizer_path(model_args(checkpoint_path=str(model))) == str(
        model / "assets" / "spiece.model")
    # --spm_model wins over the model's own.
    assert resolve.tokenizer_path(model_args(spm_model="mine.model",
                                             checkpoint_path=str(model))) == "mine.model"
    # From scratch the model directory is not looked in; a model without one is no vocabulary.
    for args in (model_args(load_from="scratch", checkpoint_path=str(model)),
                 model_args(checkpoint_path=str(tmp_path))):
        with pytest.raises(FlagError, match="no vocabulary: pass --spm_model"):
            resolve.tokenizer_path(args)


def test_fine_tuned_path_is_checked_before_loading(tmp_path):
    with pytest.raises(FlagError, match="--load_from huggingface needs --checkpoint_path"):
        resolve.fine_tuned_path(model_args(load_from="huggingface"))
    missing = str(tmp_path / "ckpt")
    with pytest.raises(FlagError, match=f"--checkpoint_dir {missing}, which does not exist"):
        resolve.fine_tuned_path(model_args(load_from="checkpoint", checkpoint_dir=missing))
    assert resolve.fine_tuned_path(model_args(load_from="checkpoint",
                                              checkpoint_dir=str(tmp_path))) == str(tmp_path)


def test_an_evaluation_only_run_takes_its_models_windows_and_refuses_others(tmp_path):
    model = tmp_path / "model"
    model.mkdir()
    write_task_card(str(model), {"task": "squad", "features": {"max_seq_length": 128}})
    defaults = {"max_seq_length": 384, "doc_stride": 128}
    args = model_args(checkpoint_path=str(model), max_seq_length=None, doc_stride=None)
    assert resolve.settle_features(args, defaults) == {"max_seq_length": 128, "doc_stride": 128}
    assert (args.max_seq_length, args.doc_stride) == (None, None)  # the flags stay as parsed
    args = model_args(checkpoint_path=str(model), max_seq_length=256, doc_stride=None)
    with pytest.raises(FlagError) as refused:
        resolve.settle_features(args, defaults)
    assert str(refused.value) == (f"--max_seq_length 256 differs from the 128 that "
                                  f"--checkpoint_path {model} was fine-tuned with: drop "
                                  "--max_seq_length")
    # A training run takes the defaults: its model's card is not consulted.
    args = model_args(checkpoint_path=str(model), train_file="t.json", max_seq_length=None,
                      doc_stride=None)
    assert resolve.settle_features(args, defaults)["max_seq_length"] == 384


def test_column_flag_is_a_position_only_without_a_header():
    assert resolve.column_flag("sentence", True, "--text_a") == "sentence"
    assert resolve.column_flag("2", False, "--text_a") == 2
    assert resolve.column_flag(None, False, "--text_b") is None
    with pytest.raises(FlagError, match="--label must be a column position .* got 'label'"):
        resolve.column_flag("label", False, "--label")
    with pytest.raises(FlagError, match="--text_a must be a column position .* got -1"):
        resolve.column_flag("-1", False, "--text_a")
