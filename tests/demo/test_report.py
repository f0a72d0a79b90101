"""albert.demo.report: every printed figure is the file's, the verdict follows the spread, a run
that only learned to abstain is named, and the answers shown are the dev file's first ones."""

import json
import os
import re
import sys

import pytest

from albert.demo import report
from albert.tasks.squad_options import AT_EMPTY, BELOW_EMPTY

NUMBER = r"([-+]?\d+\.\d+)"


def _dev(n=6):
    qas = []
    for i in range(n):
        answerable = i % 3 != 2
        qas.append({"context": f"Passage {i}. Sofia Novak maintains the zorvan module.",
                    "qas": [{"id": f"dev-{i:05d}", "question": f"Who looks after thing {i}?",
                             "answers": [{"text": "Sofia Novak", "answer_start": 12}]
                             if answerable else [], "is_impossible": not answerable}]})
    return {"version": "v2.0", "data": [{"title": "t", "paragraphs": qas}]}


def _write_run(directory, f1, has_ans=None, curve=((50, 30.0),), answer="Sofia Novak",
               total=300, no_ans=93):
    os.makedirs(os.path.join(directory, "logs"), exist_ok=True)
    results = {"f1": f1, "exact": f1 - 1, "total": total, "HasAns_f1": f1 if has_ans is None
               else has_ans, "NoAns_total": no_ans, "HasAns_total": total - no_ans}
    with open(os.path.join(directory, "eval_results.json"), "w") as f:
        json.dump(results, f)
    with open(os.path.join(directory, "predictions.json"), "w") as f:
        json.dump({f"dev-{i:05d}": answer for i in range(6)}, f)
    with open(os.path.join(directory, "logs", "metrics.jsonl"), "w") as f:
        for step, value in [*curve, (100, f1)]:
            f.write(json.dumps({"split": "train", "step": step, "loss": 1.0}) + "\n")
            f.write(json.dumps({"split": "eval", "step": step, "f1": value}) + "\n")


@pytest.fixture
def demo_dir(tmp_path):
    pre = tmp_path / "pretraining"
    (pre / "logs").mkdir(parents=True)
    with open(pre / "logs" / "metrics.jsonl", "w") as f:
        for step, acc in ((250, 0.1), (500, 0.2)):
            f.write(json.dumps({"split": "train", "step": step, "mlm_acc": acc + 0.05,
                                "sop_acc": 0.7}) + "\n")
            f.write(json.dumps({"split": "val", "step": step, "mlm_acc": acc,
                                "sop_acc": 0.65}) + "\n")
    (pre / "baselines.json").write_text(json.dumps({
        "train": {"mlm_unigram_acc": 0.08, "pairs": 9000},
        "validation": {"mlm_unigram_acc": 0.07, "pairs": 1000}}))
    (pre / "seconds").write_text("123\n")
    (tmp_path / "squad_data").mkdir()
    (tmp_path / "squad_data" / "dev-v2.0.json").write_text(json.dumps(_dev()))
    return tmp_path


def _scores(demo_dir, folder, table, **results):
    for (start, seed), f1 in table.items():
        _write_run(demo_dir / folder / f"{start}-seed{seed}", f1,
                   answer="Sofia Novak" if start == "pretrained" else "", **results)


def _verdict(out):
    return re.findall(r"^verdict: (.*)$", out, re.MULTILINE)


def test_every_figure_is_the_files_and_a_gain_beyond_the_spread_is_a_help(demo_dir, capsys):
    _scores(demo_dir, "finetune", {("pretrained", 1): 60.0, ("pretrained", 2): 58.5,
                                   ("scratch", 1): 45.25, ("scratch", 2): 47.0})
    assert report.main(["--demo_dir", str(demo_dir), "--seeds", "1", "2", "--no_picture"]) == 0
    out = capsys.readouterr().out
    rows = {int(m[0]): (float(m[1]), float(m[2]), float(m[3]))
            for m in re.findall(rf"^(\d+)\s+{NUMBER}\s+{NUMBER}\s+{NUMBER}$", out, re.MULTILINE)}
    assert rows == {1: (60.0, 45.25, 14.75), 2: (58.5, 47.0, 11.5)}
    mean = re.search(rf"^mean\s+{NUMBER}\s+{NUMBER}\s+{NUMBER}\s+\(seeds' spread {NUMBER} F1\)",
                     out, re.MULTILINE)
    assert [float(g) for g in mean.groups()] == [59.25, 46.12, 13.12, 1.75]
    assert "verdict: pretraining helped: +13.12 F1 on average (worst seed +11.50)" in out
    assert "all-empty answers 31.00 F1" in out
    assert "learned nothing" not in out
    assert "pretraining: 500 steps in 123s" in out
    assert "held-out 0.2000" in out and "held-out 0.0700" in out


@pytest.mark.parametrize("table, verdict", [
    # A mean gain inside one start's own seed spread is not a help.
    ({("pretrained", 1): 60.0, ("pretrained", 2): 48.0, ("scratch", 1): 47.0,
      ("scratch", 2): 46.0}, "verdict: cannot tell: +7.50 F1 on average is within the seeds' "
                             "spread of 12.00 F1"),
    # Inside the spread is "cannot tell" whatever the sign: -0.05 and +0.05 within 5.90 alike.
    ({("pretrained", 1): 50.0, ("pretrained", 2): 55.8, ("scratch", 1): 50.0,
      ("scratch", 2): 55.9}, "verdict: cannot tell: -0.05 F1 on average is within the seeds' "
                             "spread of 5.90 F1"),
    ({("pretrained", 1): 50.0, ("pretrained", 2): 56.0, ("scratch", 1): 50.0,
      ("scratch", 2): 55.9}, "verdict: cannot tell: +0.05 F1 on average is within the seeds' "
                             "spread of 6.00 F1"),
    ({("pretrained", 1): 40.0, ("pretrained", 2): 41.0, ("scratch", 1): 44.0,
      ("scratch", 2): 45.0}, "verdict: pretraining did not help here: -4.00 F1"),
])
def test_verdict_follows_the_spread(demo_dir, capsys, table, verdict):
    _scores(demo_dir, "finetune", table)
    report.main(["--demo_dir", str(demo_dir), "--seeds", "1", "2", "--no_picture"])
    assert verdict in capsys.readouterr().out


def test_a_seed_that_lost_is_never_a_help_and_is_named(demo_dir, capsys):
    """Issue 50: three seeds (few_labels runs three) whose mean gain is beyond the spread while
    one seed lost: 60/60/55 against 50/50/55.5, +6.50 against 5.50, seed 3 -0.50."""
    _scores(demo_dir, "finetune", {("pretrained", 1): 60.0, ("pretrained", 2): 60.0,
                                   ("pretrained", 3): 55.0, ("scratch", 1): 50.0,
                                   ("scratch", 2): 50.0, ("scratch", 3): 55.5})
    report.main(["--demo_dir", str(demo_dir), "--seeds", "1", "2", "3", "--no_picture"])
    assert _verdict(capsys.readouterr().out) == [
        "not shown: +6.50 F1 on average is more than the seeds' spread of 5.50 F1, but not "
        "every seed gained (seed 3 -0.50 F1): a gain that a seed does not show is not shown"]
    # The mirror: a mean loss beyond the spread against a seed that gained says neither.
    mirror = report.Comparison([1, 2, 3], [50.0, 50.0, 55.5], [60.0, 60.0, 55.0], 300)
    assert mirror.verdict().startswith("cannot tell: -6.50 F1 on average is beyond the seeds' "
                                       "spread of 5.50 F1, but not every seed lost (seed 3 "
                                       "+0.50 F1)")


def test_no_help_is_read_from_runs_that_learned_nothing(demo_dir, capsys):
    """Issue 50 item 6: every run at the all-empty answers of a 40-question dev set (7
    unanswerable: 17.50 F1), pretrained one question ahead and the seeds' spread 0.00."""
    table = {("pretrained", 1): 20.0, ("pretrained", 2): 20.0, ("scratch", 1): 17.5,
             ("scratch", 2): 17.5}
    _scores(demo_dir, "finetune", table, total=40, no_ans=7)
    for start, seed in table:
        _write_run(demo_dir / "finetune" / f"{start}-seed{seed}", table[start, seed],
                   has_ans=2.0, total=40, no_ans=7)
    report.main(["--demo_dir", str(demo_dir), "--seeds", "1", "2", "--no_picture"])
    out = capsys.readouterr().out
    assert len(re.findall(r"^warning: .* learned nothing", out, re.MULTILINE)) == 4
    assert _verdict(out) == [
        "cannot tell: the fine-tune from pretrained (seed 1) learned nothing (and 3 more): a "
        "start that did not learn to answer under these settings says nothing of what "
        "pretraining is worth"]
    # One start alone at the baseline rules out a help too, however large the gain.
    one = report.Comparison([1, 2], [60.0, 61.0], [17.5, 17.5], 40,
                            ("from scratch (seed 1) learned nothing",))
    assert one.verdict().startswith("cannot tell: the fine-tune from scratch (seed 1) learned "
                                    "nothing: ")


def test_a_spread_of_nothing_is_not_a_measure_of_no_noise():
    """Two seeds that agree to the hundredth measured too little noise: one question's worth of
    F1 (2.50 of 40 questions) is the least a difference must beat, and the verdict says so."""
    assert report.Comparison([1, 2], [20.0, 20.0], [17.5, 17.5], 40).verdict() == (
        "cannot tell: +2.50 F1 on average is within the seeds' spread of 0.00 F1 (less than one "
        "question's worth, 2.50 F1 of 40: seeds that agree that closely are no evidence of no "
        "noise, so one question's worth is the bar): this run cannot tell a difference from "
        "noise")
    helped = report.Comparison([1, 2], [22.5, 22.5], [17.5, 17.5], 40).verdict()
    assert helped.startswith("pretraining helped: +5.00 F1 on average (worst seed +5.00), more "
                             "than the seeds' spread of 0.00 F1 (less than one question's worth")


def test_a_seed_given_twice_is_one_line(demo_dir, capsys):
    _scores(demo_dir, "finetune", {("pretrained", 1): 60.0, ("scratch", 1): 45.0})
    with pytest.raises(SystemExit) as exit_info:
        report.main(["--demo_dir", str(demo_dir), "--seeds", "1", "1", "--no_picture"])
    assert exit_info.value.code == 2
    captured = capsys.readouterr()
    assert captured.err.strip().splitlines() == [
        "error: --seeds 1 1: a seed given twice; give each seed the demo ran once "
        "(scripts/demo.sh runs DEMO_SEED and the next)"]
    assert "verdict" not in captured.out


def test_a_fine_tune_at_the_all_empty_baseline_is_named(demo_dir, capsys):
    # 31.00 is the unanswerable share; with no answerable question right, it learned to abstain.
    _scores(demo_dir, "finetune", {("pretrained", 1): 55.0, ("pretrained", 2): 56.0,
                                   ("scratch", 1): 31.0, ("scratch", 2): 45.0})
    _write_run(demo_dir / "finetune" / "scratch-seed1", 31.0, has_ans=0.0)
    report.main(["--demo_dir", str(demo_dir), "--seeds", "1", "2", "--no_picture"])
    out = capsys.readouterr().out
    assert re.search(r"warning: the fine-tune from scratch \(seed 1\) learned nothing", out)
    assert "from pretrained (seed" not in out
    assert report.standing({"f1": 31.0, "total": 300, "NoAns_total": 93,
                            "HasAns_f1": 0.0}) == AT_EMPTY
    assert report.standing({"f1": 40.0, "total": 300, "NoAns_total": 93,
                            "HasAns_f1": 20.0}) is None


def test_a_fine_tune_far_below_the_all_empty_answers_is_not_theirs(demo_dir, capsys):
    """Issue 50 item 7: F1 0.80 on 40 questions where answering nothing scores 17.50 is not
    "the baseline's" (a check that dropped the sign would call it that): it is worse."""
    below = {"f1": 0.8, "total": 40, "NoAns_total": 7, "HasAns_f1": 0.97}
    assert report.standing(below) == BELOW_EMPTY
    _scores(demo_dir, "finetune", {("pretrained", 1): 30.0, ("pretrained", 2): 31.0,
                                   ("scratch", 1): 0.8, ("scratch", 2): 25.0},
            total=40, no_ans=7)
    _write_run(demo_dir / "finetune" / "scratch-seed1", 0.8, has_ans=0.97, total=40, no_ans=7)
    report.main(["--demo_dir", str(demo_dir), "--seeds", "1", "2", "--no_picture"])
    out = capsys.readouterr().out
    warnings = re.findall(r"^warning: .*$", out, re.MULTILINE)
    assert warnings == [
        "warning: the fine-tune from scratch (seed 1) scored below answering nothing: F1 0.80 "
        "against the all-empty answers' 17.50: it answers questions it should leave empty, and "
        "wrongly (too few updates or a learning rate that does not suit this start)"]
    assert _verdict(out)[0].startswith("cannot tell: the fine-tune from scratch (seed 1) scored "
                                       "below answering nothing: ")


def test_both_starts_answer_the_dev_files_first_questions(demo_dir, capsys):
    _scores(demo_dir, "finetune", {("pretrained", 1): 60.0, ("scratch", 1): 45.0})
    report.main(["--demo_dir", str(demo_dir), "--seeds", "1", "--answers", "3", "--no_picture"])
    out = capsys.readouterr().out
    asked = re.findall(r"^question:\s+(.*)$", out, re.MULTILINE)
    assert asked == [f"Who looks after thing {i}?" for i in range(3)]
    assert re.findall(r"^expected:\s+(.*)$", out, re.MULTILINE) == [
        "Sofia Novak", "Sofia Novak", "(no answer)"]
    assert re.findall(r"^pretrained:\s+(.*)$", out, re.MULTILINE) == ["Sofia Novak"] * 3
    assert re.findall(r"^scratch:\s+(.*)$", out, re.MULTILINE) == ["(no answer)"] * 3
    assert "one seed" in out  # one seed shows no spread: no verdict either way


def test_the_picture_is_drawn_with_both_label_shares(demo_dir, capsys):
    table = {("pretrained", 1): 60.0, ("pretrained", 2): 58.0, ("scratch", 1): 45.0,
             ("scratch", 2): 44.0}
    _scores(demo_dir, "finetune", table)
    _scores(demo_dir, "finetune_tenth", {k: v - 10 for k, v in table.items()})
    report.main(["--demo_dir", str(demo_dir), "--seeds", "1", "2"])
    out = capsys.readouterr().out
    assert "=== a tenth of the training questions" in out
    picture = demo_dir / report.PICTURE
    assert f"picture: {picture}" in out
    with open(picture, "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n"


def test_without_matplotlib_the_picture_is_one_line(demo_dir, capsys, monkeypatch):
    """Issue 52: matplotlib is the demo extra: where it is not installed the report is printed,
    then one line says what the picture needs, and no file is written."""
    _scores(demo_dir, "finetune", {("pretrained", 1): 60.0, ("scratch", 1): 45.0})
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # as if not installed
    with pytest.raises(SystemExit) as exit_info:
        report.main(["--demo_dir", str(demo_dir), "--seeds", "1"])
    assert exit_info.value.code == 2
    captured = capsys.readouterr()
    assert "=== all the training questions" in captured.out
    assert captured.err.splitlines() == [
        f"error: drawing {demo_dir / report.PICTURE} needs matplotlib, which is not installed: "
        "pip install -e '.[demo]' (scripts/setup.sh installs it), or pass --no_picture"]
    assert not (demo_dir / report.PICTURE).exists()


def test_a_missing_run_is_one_line(demo_dir, capsys):
    _scores(demo_dir, "finetune", {("pretrained", 1): 60.0})
    with pytest.raises(SystemExit) as exit_info:
        report.main(["--demo_dir", str(demo_dir), "--seeds", "1", "--no_picture"])
    assert exit_info.value.code == 2
    assert "scratch-seed1" in capsys.readouterr().err


def test_the_few_labels_runs_show_the_seeds_they_ran(demo_dir, capsys):
    """`scripts/demo.sh few_labels` runs three seeds where the demo ran two, and a report asked
    for five seeds of the demo need not find them among the few-labels runs."""
    main = {(start, seed): 50.0 + seed + (10 if start == "pretrained" else 0)
            for start in report.STARTS for seed in (1, 2, 3, 4, 5)}
    _scores(demo_dir, "finetune", main)
    _scores(demo_dir, "finetune_tenth", {(start, seed): 40.0 + seed
                                         for start in report.STARTS for seed in (1, 2, 3)})
    # A run of one start alone is not a comparison.
    _write_run(demo_dir / "finetune_tenth" / "pretrained-seed7", 40.0)
    for seeds in (["1", "2"], ["1", "2", "3", "4", "5"]):
        assert report.main(["--demo_dir", str(demo_dir), "--seeds", *seeds,
                            "--no_picture"]) == 0
        out = capsys.readouterr().out
        demo, few = out.split("=== a tenth of the training questions")
        assert re.findall(r"^(\d+)\s", demo, re.MULTILINE) == seeds
        assert re.findall(r"^(\d+)\s", few.split("=== the first")[0], re.MULTILINE) == [
            "1", "2", "3"]
    assert report.seeds_run(str(demo_dir / "finetune_tenth")) == [1, 2, 3]


@pytest.mark.parametrize("held_out, train_base, val_base, verdict", [
    # Twice the held-out baseline (0.14) though not twice the training one (0.16).
    (0.15, 0.08, 0.07, "well above its baseline on unseen text"),
    # Twice the training baseline (0.10) though not twice the held-out one (0.20).
    (0.15, 0.05, 0.10, "NOT clearly above its baseline: the pretraining learned little"),
])
def test_the_mlm_line_measures_the_held_out_accuracy_against_the_held_out_baseline(
        demo_dir, capsys, held_out, train_base, val_base, verdict):
    """The held-out accuracy is read on other documents than the training one, with their own
    most frequent masked token: only the held-out baseline measures it."""
    pre = demo_dir / "pretraining"
    with open(pre / "logs" / "metrics.jsonl", "a") as f:
        f.write(json.dumps({"split": "train", "step": 750, "mlm_acc": 0.3, "sop_acc": 0.7}) + "\n")
        f.write(json.dumps({"split": "val", "step": 750, "mlm_acc": held_out,
                            "sop_acc": 0.65}) + "\n")
    (pre / "baselines.json").write_text(json.dumps({
        "train": {"mlm_unigram_acc": train_base, "pairs": 9000},
        "validation": {"mlm_unigram_acc": val_base, "pairs": 1000}}))
    report.print_pretraining(str(demo_dir))
    out = capsys.readouterr().out
    assert re.findall(r"^  MLM: (.*)$", out, re.MULTILINE) == [verdict]
    assert (f"(always the most frequent masked token: train {train_base:.4f}  held-out "
            f"{val_base:.4f})") in out
    # 0.65 is beyond a coin's two standard errors on 1000 pairs (0.0316).
    assert re.findall(r"^  SOP: (.*)$", out, re.MULTILINE) == ["above chance on unseen text"]
