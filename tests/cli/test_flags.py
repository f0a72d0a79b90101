"""The flags every runner shares (albert.cli.flags), as the three runners see them; user_errors,
the one answer every tool gives the error family."""

import os
import re
import subprocess
import sys

import pytest
from helpers import run_in_process, tool_parser

from albert.cli.flags import user_errors
from albert.errors import CheckpointError, FlagError, OutputError

RUNNERS = ("run_pretraining", "run_squad", "run_classifier")


@pytest.mark.e2e
@pytest.mark.parametrize("runner", RUNNERS + ("answer", "classify"))
def test_help_shows_each_default_once(runner):
    out = subprocess.run([sys.executable, "-m", f"albert.{runner}", "--help"],
                         capture_output=True, text=True, timeout=120,
                         env={**os.environ, "COLUMNS": "200"}).stdout
    assert "usage:" in out
    # One entry per option: from its flags to the next option's.
    entries = re.split(r"\n  (?=-)", out)
    assert len(entries) > 10
    for entry in entries:
        assert "(default: None)" not in entry and "(default: False)" not in entry, entry
        assert len(re.findall(r"\bdefault\b", entry, re.I)) <= 1, entry


def test_plan_only_takes_the_launchers_rank_count_in_every_runner(sample_vocab, tmp_path,
                                                                    monkeypatch):
    # The same batch flags under "horovodrun -np 4" (its environment) plan for 4 ranks in all.
    for name, value in (("HOROVOD_RANK", "0"), ("HOROVOD_SIZE", "4"),
                        ("HOROVOD_LOCAL_RANK", "0")):
        monkeypatch.setenv(name, value)
    common = ["--model_size", "tiny", "--per_gpu_batch_size", "8", "--global_batch_size", "64",
              "--max_seq_length", "64", "--plan_only", "--spm_model", sample_vocab]
    extra = {"run_pretraining": ["--total_steps", "10"],
             "run_squad": ["--train_file", str(tmp_path / "x.json")],
             "run_classifier": ["--train_file", str(tmp_path / "x.tsv")]}
    for runner in RUNNERS:
        code, out, err = run_in_process(runner, common + extra[runner])
        assert code == 0, err[-2000:]
        assert "batch plan: 8 x 2 x 4 = 64" in out, (runner, out)


@pytest.mark.e2e
@pytest.mark.parametrize("runner", RUNNERS)
def test_bad_flag_is_one_line_and_exit_2_without_a_traceback(runner, tmp_path):
    """The one real process per runner for a user's error (the runners' error cases run
    in-process elsewhere): exit status 2, one "error:" line naming the flag, no traceback."""
    argv = {"run_pretraining": ["--total_steps", "10"],
            "run_squad": ["--train_file", str(tmp_path / "x.json"), "--output_dir",
                          str(tmp_path / "o")],
            "run_classifier": ["--train_file", str(tmp_path / "x.tsv"), "--output_dir",
                               str(tmp_path / "o")]}[runner]
    proc = subprocess.run([sys.executable, "-m", f"albert.{runner}", *argv, "--log_frequency",
                           "0", "--checkpoint_dir", str(tmp_path / "k")],
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"})
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert proc.stderr.strip().splitlines() == ["error: --log_frequency must be at least 1, "
                                                "got 0"]


@pytest.mark.parametrize("runner", ["run_squad", "run_classifier"])
def test_evaluation_only_from_pretrained_needs_a_path_in_both_fine_tuners(runner, sample_vocab,
                                                                          tmp_path):
    (tmp_path / "dev").write_text("x")  # never read: the missing model path comes first
    argv = {"run_squad": ["--predict_file", str(tmp_path / "dev")],
            "run_classifier": ["--eval_file", str(tmp_path / "dev")]}[runner]
    code, _, err = run_in_process(runner, [*argv, "--spm_model", sample_vocab, "--load_from",
                                           "pretrained", "--output_dir", str(tmp_path / "out")])
    assert code == 2 and "Traceback" not in err, err[-2000:]
    assert "--load_from pretrained needs --checkpoint_path" in err


# -- one name per idea across the tools: the old spellings are aliases (issue 27) ----------------

def parse(module: str, argv) -> tuple[dict, str]:
    """(the flags `python -m albert.<module> argv` parses to, what parsing wrote to stderr), in
    this process: through the tool's parse_args when it has one (the runners resolve their paths
    there), else through the parser its main builds."""
    import contextlib
    import importlib
    import io

    tool = importlib.import_module(f"albert.{module}")
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        args = (tool.parse_args(argv) if hasattr(tool, "parse_args")
                else tool_parser(module).parse_args(argv))
    return vars(args), err.getvalue()


# (tool, the flags every case of it needs, old spelling, its values, new name, its values)
RENAMED = [
    ("run_classifier", [], "--predict_file", ["test.tsv"], "--test_file", ["test.tsv"]),
    ("answer", ["--question", "q", "--context", "c"], "--model", ["serving/1"],
     "--checkpoint_path", ["serving/1"]),
    ("classify", ["--text", "t"], "--model", ["serving/1"], "--checkpoint_path", ["serving/1"]),
    ("export", ["--checkpoint_path", "ckpt", "--output_dir", "serving/1"], "--task", ["qa"],
     "--head", ["qa"]),
    ("squad_eval", ["dev.json", "predictions.json"], "--na-prob-file", ["null_odds.json"],
     "--na_prob_file", ["null_odds.json"]),
    ("squad_eval", ["dev.json", "predictions.json"], "--out-file", ["scores.json"], "--output",
     ["scores.json"]),
    ("squad_eval", ["dev.json", "predictions.json"], "--out_file", ["scores.json"], "--output",
     ["scores.json"]),
    ("squad_eval", ["dev.json", "predictions.json"], "--version", ["v1.1"], "--squad_version",
     ["squadv1"]),
    ("demo.squad_sample", ["--output_dir", "squad"], "--version", ["v1.1"], "--squad_version",
     ["squadv1"]),
    ("demo.classification_sample", ["--output_dir", "pairs"], "--task", ["same_topic"],
     "--sample_task", ["same_topic"]),
    ("plan", [], "--model_sizes", ["tiny", "base"], "--model_size", ["tiny", "base"]),
    ("plan", [], "--seq_lengths", ["128", "256"], "--max_seq_length", ["128", "256"]),
    ("plan", [], "--precisions", ["bf16"], "--precision", ["bf16"]),
    ("plan", [], "--memory_gb", ["16", "80"], "--memory_budget_gb", ["16", "80"]),
    ("plan", [], "--ranks", ["4"], "--plan_ranks", ["4"]),
    ("plan", [], "--accumulation", ["3"], "--gradient_accumulation_steps", ["3"]),
]


@pytest.mark.parametrize("tool, common, old, old_values, new, new_values", RENAMED,
                         ids=[f"{case[0]}{case[2]}" for case in RENAMED])
def test_old_spelling_is_an_alias_with_one_deprecation_line(tool, common, old, old_values, new,
                                                            new_values):
    old_args, old_err = parse(tool, [*common, old, *old_values])
    new_args, new_err = parse(tool, [*common, new, *new_values])
    assert old_args == new_args  # every flag alike: the new name's value, nothing else differs
    assert new_err == ""
    assert old_err.splitlines() == [f"{old} is deprecated; use {new}"]
    # --old=value too (argparse's other form), and the old spelling among other flags.
    if len(old_values) == 1:
        assert parse(tool, [f"{old}={old_values[0]}", *common]) == (old_args, old_err)


@pytest.mark.parametrize("tool, common, value, same", [
    ("run_squad", ["--predict_file", "dev.json"], "v2.0", "squadv2"),
    ("run_squad", ["--predict_file", "dev.json"], "v1.1", "squadv1"),
    ("answer", ["--checkpoint_path", "serving/1", "--question", "q", "--context", "c"], "v1.1",
     "squadv1"),
    ("squad_eval", ["dev.json", "predictions.json"], "v2.0", "squadv2"),
    ("demo.squad_sample", ["--output_dir", "squad"], "v1.1", "squadv1"),
])
def test_squad_version_takes_either_spelling_of_its_values(tool, common, value, same):
    """One flag (--squad_version) and one value set (squadv1|squadv2) in the four tools that
    take a SQuAD version; the files' own spelling (v1.1, v2.0) is read as the same value."""
    args, err = parse(tool, [*common, "--squad_version", value])
    assert args["squad_version"] == same and err == ""
    assert args == parse(tool, [*common, "--squad_version", same])[0]


TOOLS = sorted({case[0] for case in RENAMED} | {"run_squad"})


@pytest.mark.parametrize("tool", TOOLS)
def test_help_names_the_new_flags_only_and_each_default_once(tool, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    text = tool_parser(tool).format_help()
    for case in RENAMED:
        if case[0] == tool:
            assert re.search(rf"\n  {re.escape(case[4])}\b", text), (case[4], text)
            assert not re.search(rf"(?<![\w-]){re.escape(case[2])}(?![\w-])", text), \
                (case[2], text)
    if tool in ("run_squad", "answer", "squad_eval", "demo.squad_sample"):
        assert "--squad_version {squadv1,squadv2}" in text and "--version" not in text
    for entry in re.split(r"\n  (?=-)", text):
        assert "(default: None)" not in entry and "(default: False)" not in entry, entry
        assert len(re.findall(r"\bdefault\b", entry, re.I)) <= 1, entry


EVERY_TOOL = ("run_pretraining", "run_squad", "run_classifier", "answer", "classify", "export",
              "plan", "check_records", "create_pretraining_data", "train_tokenizer", "squad_eval",
              "corpus_text", "demo.sample", "demo.squad_sample", "demo.classification_sample",
              "demo.report")


@pytest.mark.parametrize("tool", EVERY_TOOL)
def test_help_shows_every_default(tool, monkeypatch):
    """Each flag with a value by default shows it (0 and 0.0 too, and a flag without help
    text); a flag without one (None) says in its help what it is for, or is required."""
    import argparse

    from albert.cli.flags import HelpFormatter, shows_default

    monkeypatch.setenv("COLUMNS", "200")
    parser = tool_parser(tool)
    assert isinstance(parser.formatter_class(prog="x"), HelpFormatter)
    entries = {entry.split()[0].rstrip(","): entry
               for entry in re.split(r"\n  (?=-)", parser.format_help())[1:]}
    for action in parser.actions():
        if not action.option_strings or action.help == argparse.SUPPRESS or isinstance(
                action, argparse._HelpAction):
            continue
        entry = entries[action.option_strings[0]]
        if shows_default(action):
            assert re.search(r"\bdefault\b", entry, re.I), entry
            if "%(default)" not in (action.help or "") and "default" not in (action.help or ""):
                assert f"default: {action.default}" in " ".join(entry.split()), entry
        elif action.default is None and not action.required:
            assert (action.help or "").strip(), f"{tool} {action.option_strings[0]}: no help"
    # The check itself: 0.0 equals False but is shown; an empty help line still shows it.
    probe = argparse.ArgumentParser(formatter_class=HelpFormatter)
    probe.add_argument("--rate", type=float, default=0.0)
    probe.add_argument("--off", action="store_true")
    text = probe.format_help()
    assert "default: 0.0" in text and "False" not in text


def test_old_spellings_run_as_the_new_ones(tmp_path):
    """The whole command, not only its flags: albert.plan and albert.squad_eval under their old
    spellings print what they print under the new ones, after one deprecation line per flag."""
    new = ["--model_size", "tiny", "--max_seq_length", "128", "--precision", "fp32",
           "--memory_budget_gb", "16", "--plan_ranks", "2", "--gradient_accumulation_steps", "1"]
    old = ["--model_sizes", "tiny", "--seq_lengths", "128", "--precisions", "fp32",
           "--memory_gb", "16", "--ranks", "2", "--accumulation", "1"]
    code, out, err = run_in_process("plan", new)
    assert (code, err) == (0, "") and "| tiny | 128 | fp32 |" in out
    assert run_in_process("plan", old) == (0, out, "".join(
        f"{o} is deprecated; use {n}\n" for o, n in zip(old[::2], new[::2], strict=True)))

    import json

    data = {"version": "v2.0", "data": [{"paragraphs": [{"context": "Mira owns it.", "qas": [
        {"id": "a", "question": "Who?", "is_impossible": False,
         "answers": [{"text": "Mira", "answer_start": 0}]},
        {"id": "b", "question": "What?", "is_impossible": True, "answers": []}]}]}]}
    (tmp_path / "dev.json").write_text(json.dumps(data))
    (tmp_path / "pred.json").write_text(json.dumps({"a": "Mira", "b": ""}))
    (tmp_path / "na.json").write_text(json.dumps({"a": 0.1, "b": 0.9}))
    files = [tmp_path / "dev.json", tmp_path / "pred.json"]
    code, out, err = run_in_process("squad_eval", [*files, "--na_prob_file", tmp_path / "na.json",
                                                   "--output", tmp_path / "new.json"])
    assert (code, err) == (0, "") and json.loads(out)["f1"] == 100.0
    assert run_in_process("squad_eval", [*files, "--na-prob-file", tmp_path / "na.json",
                                         "--out-file", tmp_path / "old.json"]) == (
        0, out, "--na-prob-file is deprecated; use --na_prob_file\n"
                "--out-file is deprecated; use --output\n")
    assert (tmp_path / "old.json").read_text() == (tmp_path / "new.json").read_text()


def renamed_parser(**kwargs):
    """A Parser with two renamed flags, one of them required."""
    from albert.cli.flags import Parser, Renamed

    p = Parser(prog="tool", **kwargs)
    g = p.add_argument_group("group")
    g.add_argument("--size", action=Renamed, old=("--sizes", "--n"), type=int, choices=(1, 2, 3),
                   required=True)
    p.add_argument("--mode", action=Renamed, old=("--speed",), old_values={"quick": "fast"},
                   choices=("fast", "slow"), default="fast")
    return p


def test_renamed_old_spellings_are_the_new_flags_own_action():
    """flags.Renamed: an old spelling satisfies a required flag, takes --old=value, converts and
    checks its values as the new name does, reads an old spelling of a value, is hidden from
    --help, and cannot take a name that is already a flag."""
    import argparse
    import contextlib
    import io

    from albert.cli.flags import Renamed

    p = renamed_parser()
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        args = p.parse_args(["--n=2", "--speed", "quick"])
    assert (args.size, args.mode) == (2, "fast")
    assert err.getvalue().splitlines() == ["--n is deprecated; use --size",
                                           "--speed is deprecated; use --mode"]
    for argv in ([], ["--sizes", "4"], ["--sizes", "x"], ["--size", "1", "--mode", "slowest"]):
        with contextlib.redirect_stderr(io.StringIO()), pytest.raises(SystemExit):
            p.parse_args(argv)
    assert "--sizes" not in p.format_help() and "--speed" not in p.format_help()
    assert "--size {1,2,3}" in p.format_help() and "--mode {fast,slow}" in p.format_help()
    with pytest.raises(argparse.ArgumentError, match="conflicting option string: --mode"):
        p.add_argument("--big", action=Renamed, old=("--mode",))


@pytest.mark.parametrize("argv, message", [
    ([], "the following arguments are required: --size"),
    (["--sizes", "4"], "argument --size: invalid choice: 4 (choose from 1, 2, 3)"),
    (["--n", "x"], "argument --size: invalid int value: 'x'"),
    (["--size", "1", "--speed", "slowest"],
     "argument --mode: invalid choice: 'slowest' (choose from 'fast', 'slow')"),
    (["--size"], "argument --size: expected one argument"),
])
def test_renamed_flags_errors_name_the_new_spelling_only(argv, message, capsys):
    """An error names a renamed flag as --help does, by its new spelling, whichever spelling was
    given: the usage line, then "tool: error: <message>", exit status 2, as argparse says it of
    a flag without old spellings."""
    with pytest.raises(SystemExit) as exit_:
        renamed_parser().parse_args(argv)
    assert exit_.value.code == 2
    assert capsys.readouterr().err.splitlines()[-1] == f"tool: error: {message}"


@pytest.mark.parametrize("argv, message", [
    (["--size", "1", "--colour"], "unrecognized arguments: --colour"),
    ([], "the following arguments are required: --size"),
    (["--size", "x"], "argument --size: invalid int value: 'x'"),
    (["--size", "9"], "argument --size: invalid choice: 9 (choose from 1, 2, 3)"),
])
def test_parser_without_exit_on_error_raises_every_error_as_a_flag_error(argv, message, capsys):
    """exit_on_error=False, which argparse honours only for a bad value, holds for every error
    of flags.Parser (an unknown flag, a missing one): a FlagError with argparse's message, and
    nothing printed, nothing exited."""
    with pytest.raises(FlagError) as error:
        renamed_parser(exit_on_error=False).parse_args(argv)
    assert str(error.value) == message
    assert capsys.readouterr().err == ""


def test_a_runners_own_checks_raise_too_with_its_parser_given():
    """The SageMaker launcher checks a job's flags with the runner's parse_args and a parser
    that raises: the runner's checks after parsing (--total_steps required) raise alike."""
    from albert import run_pretraining

    parser = run_pretraining.build_parser()
    parser.exit_on_error = False
    with pytest.raises(FlagError, match="^--total_steps is required$"):
        run_pretraining.parse_args([], parser)
    assert run_pretraining.parse_args(["--total_steps", "3"], parser).total_steps == 3


# -- --verbose: a flag of every tool's parser (issue 52) -----------------------------------------


@pytest.mark.parametrize("tool", EVERY_TOOL + ("demo.sweep",))
def test_verbose_is_a_flag_of_every_tools_parser(tool, monkeypatch):
    """--verbose is declared by the Parser itself: in every tool's --help, and abbreviated as
    argparse abbreviates any flag (the Parser allows abbreviations): --verb can mean no other
    flag of any tool."""
    monkeypatch.setenv("COLUMNS", "200")
    parser = tool_parser(tool)
    assert parser.allow_abbrev
    assert re.search(r"\n  --verbose +show TensorFlow's start-up lines", parser.format_help())
    assert [o for o in parser.option_actions() if o.startswith("--verb")] == ["--verbose"]


def test_verbose_is_read_from_the_parsed_flags_abbreviated_or_ambiguous_as_any(monkeypatch):
    """run_main reads --verbose from the parsed flags: --verb is it (TensorFlow's own log level
    turned up, as --verbose does), and a prefix that could be two flags is refused as argparse
    refuses any."""
    monkeypatch.setenv("TF_CPP_MIN_LOG_LEVEL", "2")
    monkeypatch.delenv("TF_CPP_MIN_LOG_LEVEL")  # restored after the test
    code, out, err = run_in_process("plan", ["--verb", "--model_size", "tiny", "--precision",
                                             "fp32", "--max_seq_length", "128",
                                             "--memory_budget_gb", "16"])
    assert (code, err) == (0, "") and "tiny" in out
    assert os.environ["TF_CPP_MIN_LOG_LEVEL"] == "0"

    code, out, err = run_in_process("squad_eval", ["dev.json", "preds.json", "--ver"])
    assert code == 2 and out == ""
    assert err.splitlines()[-1].endswith(
        "error: ambiguous option: --ver could match --verbose, --version")


# -- user_errors: the error family as one line and exit status 2 --------------------------------


@pytest.mark.parametrize("error", [
    FlagError("--total_steps must be at least 1, got 0"),
    CheckpointError("runs/x has no checkpoint"),
    OutputError("cannot create --output_dir /x: Permission denied"),
    FileNotFoundError(2, "No such file or directory", "data/train.json"),
    IsADirectoryError(21, "Is a directory", "data"),
])
def test_user_errors_answers_the_family_with_one_line(error, capsys):
    with pytest.raises(SystemExit) as exit_, user_errors():
        raise error
    assert exit_.value.code == 2
    assert capsys.readouterr().err == f"error: {error}\n"


def test_user_errors_lets_a_plain_value_error_through(capsys):
    """A ValueError no check of ours raised is a bug: its traceback is kept, not turned into an
    "error:" line that reads like the user's fault."""
    with pytest.raises(ValueError, match="an internal invariant"), user_errors():
        raise ValueError("an internal invariant")
    with pytest.raises(KeyError), user_errors():
        raise KeyError("x")
    assert capsys.readouterr().err == ""
