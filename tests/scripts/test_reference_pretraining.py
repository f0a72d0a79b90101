"""scripts/reference_pretraining.py (issue 33 item 1a): our trainer and the PyTorch reference start
from the same weights and take the same batches, so without dropout the first update's losses
agree to float32 rounding, and the JSON holds both curves."""

import importlib.util
import json
import os

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
