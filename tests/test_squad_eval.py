"""albert.squad_eval: JSON on stdout, one `error:` line and exit 2 for input the official scripts
crash on, their warnings for missing predictions, nothing else on stderr (its main in this
process: the exit status it returns, what it prints); as a user runs it (real processes): the
exit status the shell sees, no start-up lines; in this process, the same one line for a file that
is not SQuAD's, a bug's traceback kept. The scoring rules themselves:
tests/eval/test_squad_scoring.py."""

import json
import subprocess
import sys

import pytest
from helpers import run_in_process, squad_json, squad_v2_sample


def squad_eval(*argv):
    """(exit status, stdout, stderr) of `python -m albert.squad_eval argv` as its main here."""
    return run_in_process("squad_eval", argv)


def test_cli_prints_json_and_errors(tmp_path):
    data, preds, na = tmp_path / "d.json", tmp_path / "p.json", tmp_path / "n.json"
    data.write_text(json.dumps(squad_v2_sample()))
    preds.write_text(json.dumps({"a": "Paris", "b": "1990", "c": "", "d": ""}))
    na.write_text(json.dumps({"a": 0.0, "b": 0.0, "c": 1.0, "d": 1.0}))
    code, out, err = squad_eval(data, preds, "--na_prob_file", na)
    assert code == 0, err
    result = json.loads(out)
    assert result["exact"] == 100.0 and result["best_f1"] == 100.0
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    code, _, err = squad_eval(bad, preds)
    assert code == 2 and "is not valid JSON" in err


@pytest.mark.e2e
def test_bad_json_exits_2_as_a_process(tmp_path):
    """The one real process for an error: the exit status the shell sees (`sys.exit(main())`),
    the one line on stderr and nothing on stdout (the other errors run in-process)."""
    bad, preds = tmp_path / "bad.json", tmp_path / "p.json"
    bad.write_text("{not json")
    preds.write_text("{}")
    proc = subprocess.run([sys.executable, "-m", "albert.squad_eval", str(bad), str(preds)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and proc.stdout == ""
    [line] = proc.stderr.splitlines()
    assert line.startswith("error: ") and "is not valid JSON" in line


# -- hostile input (issue 13) -----------------------------------------------------------------


def write_json(path, obj):
    path.write_text(json.dumps(obj))
    return path


def test_null_odds_missing_ids_is_an_error_naming_them(tmp_path):
    """Item 6: a no-answer file without some predicted ids made best_f1 65 (below plain F1 100)
    without a word; the official v2.0 script raises KeyError there: one error line naming the
    count and the ids, exit 2."""
    data = write_json(tmp_path / "d.json", squad_v2_sample())
    preds = write_json(tmp_path / "p.json", {"a": "Paris", "b": "1990", "c": "", "d": ""})
    na = write_json(tmp_path / "n.json", {"a": 0.0, "b": 0.0})
    code, out, err = squad_eval(data, preds, "--na_prob_file", na)
    assert code == 2 and out == ""
    assert err.splitlines() == [
        f"error: no-answer file {na}: no value for 2 of the 4 predicted questions: 'c', 'd'; the "
        "official SQuAD v2.0 script stops on such a file (KeyError) and best_f1 without them "
        "would be wrong: write a value for every question"]
    # An id without a prediction needs no value (the official script never looks it up); ids
    # the data does not have are ignored, as there.
    write_json(preds, {"a": "Paris", "b": "1990", "c": ""})
    write_json(na, {"a": 0.0, "b": 0.0, "c": 1.0, "zz": 0.5})
    code, out, err = squad_eval(data, preds, "--na_prob_file", na)
    assert code == 0, err
    # Over the 3 scored questions (the official sweep mixes in unpredicted 'd': 133.3).
    assert json.loads(out)["best_f1"] == 100.0


def test_missing_predictions_warn_as_the_official_scripts(tmp_path):
    """Item 6 (predictions missing ids): v2.0 leaves them out of the scores, v1.1 scores them 0
    (each official script's rule), and both warn on stderr with the count and the ids."""
    data = write_json(tmp_path / "d.json", squad_v2_sample())
    preds = write_json(tmp_path / "p.json", {"a": "Paris", "c": ""})
    code, out, err = squad_eval(data, preds)
    assert code == 0, err
    result = json.loads(out)
    assert result["total"] == 2 and result["exact"] == 100.0 and result["missing_predictions"] == 2
    assert err.splitlines() == [
        f"warning: 2 of the questions in {data} have no prediction in {preds} (b, d); as in the "
        "official v2.0 script they are left out of every score and total"]
    v1 = write_json(tmp_path / "v1.json", squad_json(
        [{"id": "q1", "question": "?", "answers": [{"text": "x", "answer_start": 0}]},
         {"id": "q2", "question": "?", "answers": [{"text": "y", "answer_start": 0}]}], "1.1"))
    code, out, err = squad_eval(v1, write_json(tmp_path / "p1.json", {"q1": "x"}))
    assert code == 0 and json.loads(out)["exact_match"] == 50.0
    assert "scored 0 and counted in the total" in err and "(q2)" in err


@pytest.mark.parametrize(
    "preds, na, message",
    [
        ({"a": "Paris", "b": 1990, "c": "", "d": None}, None,
         "error: predictions file {p}: 2 answer(s) are not strings (e.g. 'b': int 1990); "
         "ids: 'b', 'd'"),
        ({"a": "Paris", "b": "1990", "c": "", "d": ""}, {"a": 0, "b": "high", "c": 1, "d": 1},
         "error: no-answer file {n}: 1 value(s) are not numbers (e.g. 'b': str 'high'); ids: 'b'"),
        ({"a": "Paris", "b": "1990", "c": "", "d": ""}, {"a": 0, "b": None, "c": 1, "d": True},
         "error: no-answer file {n}: 2 value(s) are not numbers (e.g. 'b': NoneType None); "
         "ids: 'b', 'd'"),
        (["Paris"], None, "error: predictions file {p} must map question ids to answer strings, "
                          "got list"),
    ],
)
def test_non_string_prediction_or_non_numeric_null_odds_is_one_line_error(preds, na, message,
                                                                           tmp_path):
    """Item 12 (squad_eval): were TypeError/AttributeError tracebacks."""
    data = write_json(tmp_path / "d.json", squad_v2_sample())
    p = write_json(tmp_path / "p.json", preds)
    argv = [data, p]
    n = tmp_path / "n.json"
    if na is not None:
        argv += ["--na_prob_file", write_json(n, na)]
    code, out, err = squad_eval(*argv)
    assert code == 2 and out == ""
    assert err.splitlines() == [message.format(p=p, n=n)]


@pytest.mark.e2e
def test_squad_eval_prints_no_start_up_lines(tmp_path):
    """Issue 27: squad_eval starts as every tool (albert.cli.quiet_start): stderr holds nothing but
    what it says itself. A real process, in the user's environment: start-up lines are printed
    as a process starts."""
    from helpers import as_a_user_runs, start_up_noise

    data = write_json(tmp_path / "d.json", squad_v2_sample())
    preds = write_json(tmp_path / "p.json", {"a": "Paris", "b": "1990", "c": "", "d": ""})
    proc = as_a_user_runs("squad_eval", data, preds)
    assert proc.returncode == 0, proc.stderr
    assert start_up_noise(proc.stderr) == [] and proc.stderr == ""
    assert json.loads(proc.stdout)["exact"] == 100.0


# -- in this process ---------------------------------------------------------------------------


def test_a_cli_without_run_main_answers_the_same_way(tmp_path, monkeypatch, capsys):
    """squad_eval (not a runner): a file that is not SQuAD's is one line and status 2; a bug
    inside the scoring surfaces as its ValueError."""
    from albert import squad_eval

    data, preds = tmp_path / "dev.json", tmp_path / "preds.json"
    data.write_text("{}")
    preds.write_text("{}")
    with pytest.raises(SystemExit) as exit_:
        squad_eval.main([str(data), str(preds)])
    assert exit_.value.code == 2
    assert capsys.readouterr().err == (f"error: {data} is not a SQuAD file (no top-level "
                                       "'data' list)\n")

    data.write_text(json.dumps({"version": "v2.0", "data": []}))

    def broken(*args, **kwargs):
        raise ValueError("a bug in the scoring")

    monkeypatch.setattr(squad_eval, "evaluate", broken)
    with pytest.raises(ValueError, match="a bug in the scoring"):
        squad_eval.main([str(data), str(preds)])
