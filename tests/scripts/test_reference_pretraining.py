"""scripts/reference_pretraining.py (issue 33 item 1a): our trainer and the PyTorch reference start
from the same weights and take the same batches, so without dropout the first update's losses
agree to float32 rounding, and the JSON holds both curves."""

import importlib.util
import json
import math
import os

import numpy as np
import pytest
from helpers import PREDS, REPO_ROOT, SEQ


def load_script():
    path = os.path.join(REPO_ROOT, "scripts", "reference_pretraining.py")
    spec = importlib.util.spec_from_file_location("reference_pretraining", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def argv(records, vocab, out, *extra):
    return ["--records", str(records), "--spm_model", vocab, "--max_seq_length", str(SEQ),
            "--max_predictions_per_seq", str(PREDS), "--batch_size", "8", "--output", str(out),
            *extra]


@pytest.mark.slow
def test_both_sides_agree_at_the_first_update_and_write_both_curves(sample_records,
                                                                    sample_vocab, tmp_path):
    out = tmp_path / "ref.json"
    assert load_script().main(argv(sample_records, sample_vocab, out, "--steps", "20",
                                   "--learning_rate", "1e-3", "--warmup_steps", "5",
                                   "--optimizer", "adamw", "--eval_every", "10",
                                   "--eval_batches", "2", "--no_dropout", "--threads", "1")) == 0
    result = json.loads(out.read_text())
    first = result["first_update_loss"]
    assert first["ours"] == pytest.approx(first["reference"], rel=1e-5)
    assert result["learning_rate_max_abs_diff"] < 1e-8
    for side in ("ours", "reference"):
        assert [e["step"] for e in result[side]["evals"]] == [0, 10, 20]
        assert len(result[side]["train_loss"]) == 20
        assert {"mlm_acc", "sop_acc", "loss", "train_loss"} <= set(result[side]["evals"][-1])
    # Same weights, batches and formulas: the trajectories stay together (float32 rounding
    # only, which Adam amplifies slowly).
    assert result["ours"]["train_loss"] == pytest.approx(result["reference"]["train_loss"],
                                                         rel=1e-3)


def test_records_without_a_train_directory_is_one_line_and_exit_2(sample_vocab, tmp_path,
                                                                   capsys):
    with pytest.raises(SystemExit) as stop:
        load_script().main(argv(tmp_path, sample_vocab, tmp_path / "ref.json", "--steps", "2"))
    err = capsys.readouterr().err.strip().splitlines()
    assert stop.value.code == 2
    assert len(err) == 1 and f"--records {str(tmp_path)!r} has no train/ directory" in err[0], err
    assert not (tmp_path / "ref.json").exists()


@pytest.mark.parametrize("flags, words", [
    (["--learning_rate", "nan"], "--learning_rate must be a finite number of 0 or more, got nan"),
    (["--learning_rate", "inf"], "--learning_rate must be a finite number of 0 or more, got inf"),
    (["--learning_rate=-1e-3"], "--learning_rate must be a finite number of 0 or more, got "
                                "-0.001"),
    (["--warmup_steps=-1"], "--warmup_steps must be 0 or more, got -1"),
])
def test_a_learning_rate_that_is_no_number_is_refused_up_front(flags, words, sample_vocab,
                                                               tmp_path, capsys):
    """Issue 50 item 16: --learning_rate nan used to train both sides on NaN and report them
    agreeing; it is one line and exit 2 before anything is read or built."""
    out = tmp_path / "ref.json"
    assert load_script().main(argv(tmp_path, sample_vocab, out, "--steps", "2", *flags)) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"error: {words}"], err
    assert not out.exists()


def _evaluation(step, loss):
    return {"step": step, "mlm_acc": 0.1, "sop_acc": 0.5, "mlm_loss": loss - 0.7,
            "sop_loss": 0.7, "loss": loss, "train_loss": None if step == 0 else loss}


def _curve(train_loss, eval_losses):
    return {"evals": [_evaluation(step, loss) for step, loss in eval_losses],
            "train_loss": list(train_loss), "grad_norm": [1.0] * len(train_loss)}


def _report(script, curves, lr_diff, tmp_path, sample_vocab):
    out = tmp_path / "ref.json"
    args = script.parse_args(argv(tmp_path, sample_vocab, out, "--steps", "2"))
    val = [{"masked_lm_weights": np.ones((8, 10)), "input_ids": np.zeros((8, 64))}]
    rc = script.report(args, curves, lr_diff, val, {"weight_decay": 0.01},
                       {"wall": 3.0, "ours_s": 1.0, "reference_s": 1.0})

    def no_bare_constants(name):
        raise AssertionError(f"{out} holds {name}: not JSON")

    return rc, json.loads(out.read_text(), parse_constant=no_bare_constants)


def test_two_diverged_trainers_are_no_agreement(sample_vocab, tmp_path, capsys):
    """Issue 50 item 16: both sides' losses NaN from update 2 (as a learning rate far too high
    makes them) is "diverged", exit 1, with no learning-rate or gap line claiming agreement;
    the JSON stays JSON (null for what is not a number)."""
    script = load_script()
    nan = math.nan
    curves = {side: _curve([7.6, nan], [(0, 7.6), (2, nan)]) for side in ("ours", "reference")}
    rc, result = _report(script, curves, nan, tmp_path, sample_vocab)
    out = capsys.readouterr().out
    assert rc == 1
    assert ("diverged: ours at update 2 (training loss nan); reference at update 2 (training "
            "loss nan); no comparison (both did: lower --learning_rate (now 0.001)") in out, out
    assert "learning rates differ" not in out and "final gap" not in out, out
    assert result["diverged"] == {side: "update 2 (training loss nan)"
                                  for side in ("ours", "reference")}
    assert result["ours"]["train_loss"] == [7.6, None]
    assert result["noise"]["final_mlm_acc_gap"] == 0.0  # the accuracies were numbers
    assert result["learning_rate_max_abs_diff"] is None


def test_one_side_diverging_is_a_disagreement(sample_vocab, tmp_path, capsys):
    script = load_script()
    curves = {"ours": _curve([7.6, 7.1], [(0, 7.6), (2, math.inf)]),
              "reference": _curve([7.6, 7.1], [(0, 7.6), (2, 7.0)])}
    rc, result = _report(script, curves, 0.0, tmp_path, sample_vocab)
    out = capsys.readouterr().out
    assert rc == 1
    assert ("diverged: ours at the evaluation at step 2 (loss inf); no comparison (the "
            "reference side did not: the two trainers disagree)") in out, out
    assert result["diverged"] == {"ours": "the evaluation at step 2 (loss inf)"}
    assert result["ours"]["evals"][-1]["loss"] is None


def test_finite_curves_are_compared_and_exit_0(sample_vocab, tmp_path, capsys):
    script = load_script()
    curves = {side: _curve([7.6, 7.1], [(0, 7.6), (2, 7.0)]) for side in ("ours", "reference")}
    rc, result = _report(script, curves, 1e-9, tmp_path, sample_vocab)
    out = capsys.readouterr().out
    assert rc == 0 and result["diverged"] == {}
    assert "learning rates differ by at most 1.00e-09" in out
    assert "final gap +0.0000" in out and "diverged" not in out
