"""scripts/demo.sh end to end (reduced).

The demo's point is one printed comparison: pretrained against scratch on two seeds each, with all
the training questions (`scripts/demo.sh`) and then with a tenth of them (`scripts/demo.sh
few_labels`, from the same pretrained model), beside the pretraining's MLM/SOP accuracy against
their baselines. A summary that read the wrong file, swapped the runs, or rounded the difference
from other numbers would still look fine on screen, so the end-to-end test checks every printed
figure against the files the runs wrote and rescores every prediction file with the official
scorer.
"""

import collections
import glob
import json
import os
import re
import subprocess
import sys

import pytest

from albert.eval.squad_scoring import evaluate

pytestmark = pytest.mark.e2e

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NUMBER = r"([-+]?\d+\.\d+)"


def _questions(data):
    for article in data["data"]:
        for paragraph in article["paragraphs"]:
            for qa in paragraph["qas"]:
                yield article["title"], paragraph["context"], qa


# -- the demo, reduced ----------------------------------------------------------------------------


def _number(pattern: str, text: str) -> list[float]:
    match = re.search(pattern, text, re.MULTILINE)
    assert match, f"the demo's output has no line matching {pattern!r}"
    return [float(g) for g in match.groups()]


def _last_metrics(path: str, split: str) -> dict:
    with open(path, encoding="utf-8") as f:
        records = [json.loads(line) for line in f if line.strip()]
    return [r for r in records if r["split"] == split][-1]


def _demo(out, *part, quick="1", seed="3", **more):
    env = dict(os.environ, DEMO_QUICK=quick, DEMO_DIR=str(out), DEMO_SEED=seed, **more)
    return subprocess.run(["bash", os.path.join(REPO_ROOT, "scripts", "demo.sh"), *part],
                          env=env, cwd=REPO_ROOT, capture_output=True, text=True, timeout=1200)


@pytest.fixture(scope="module")
def quick_demo_runs(tmp_path_factory):
    """The quick demo, then its few-labels part: (both finished processes; the output
    directory)."""
    out = tmp_path_factory.mktemp("demo") / "demo_output"
    procs = []
    for part in ((), ("few_labels",)):
        proc = _demo(out, *part)
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
        procs.append(proc)
    return procs, str(out)


@pytest.fixture(scope="module")
def quick_demo(quick_demo_runs):
    """(Both parts' outputs, one after the other; the output directory)."""
    procs, out = quick_demo_runs
    return "".join(p.stdout for p in procs), out


SEEDS = (3, 4)  # DEMO_SEED=3 and the next
FOLDERS = ("finetune", "finetune_tenth")


def test_quick_demo_prints_the_comparison(quick_demo):
    """Each part's report, read against the runs it reports: the demo's compares the fine-tunes
    on all the training questions, the few-labels part's those and the tenth's, every figure and
    verdict as the runs' files give them."""
    stdout, out = quick_demo
    demo, few_labels = stdout.split("=== a tenth of the labels")
    for part in (demo, few_labels):
        for line in ("=== pretrained vs from scratch", "MLM accuracy", "SOP accuracy",
                     "=== the first 4 dev questions", f"picture: {out}"):
            assert line in part, f"missing {line!r} in the demo's output"
    assert check_report(demo, out) == ["all the training questions"]
    assert check_report(few_labels, out) == ["all the training questions",
                                             "a tenth of the training questions"]
    with open(os.path.join(out, "pretraining_pays.png"), "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n"


def test_quick_demo_prints_no_tensorflow_start_up_lines(quick_demo_runs):
    """Every step silences TensorFlow's C++ start-up lines, which say nothing about the demo (the
    baselines step, a script of its own, printed them)."""
    procs, _ = quick_demo_runs
    for proc in procs:
        for noise in ("absl::InitializeLog", "oneDNN custom operations", "port.cc:"):
            assert noise not in proc.stdout + proc.stderr, (proc.args, noise)


def test_quick_demo_marks_its_folder_and_writes_only_names_it_may_clear(quick_demo):
    """The demo takes again only a folder it made, and empties there only the names it writes:
    its folder holds its marker and those names and nothing else, so a re-run is allowed and
    clears all of it."""
    _, out = quick_demo
    with open(os.path.join(REPO_ROOT, "scripts", "demo.sh"), encoding="utf-8") as f:
        outputs = re.search(r"^OUTPUTS=\(([^)]*)\)", f.read(), re.MULTILINE).group(1).split()
    assert os.path.isfile(os.path.join(out, ".albert-demo"))
    # The sweep test may have added sweep/ by now; few_labels has added its two folders.
    assert {"squad_tenth", "finetune_tenth", "pretraining_pays.png"} <= set(os.listdir(out))
    assert set(os.listdir(out)) - {".albert-demo"} <= set(outputs)


def _section(stdout: str, title: str) -> str:
    start = stdout.index(f"=== {title}")
    end = stdout.find("\n=== ", start + 1)
    return stdout[start:end if end > 0 else None]


REPORTS = (("finetune", "all the training questions"),
           ("finetune_tenth", "a tenth of the training questions"))


def check_report(text: str, out: str) -> list[str]:
    """Asserts that each comparison albert.demo.report printed in `text` (its last report) is
    what the runs under the demo folder `out` wrote: the dev questions counted, each seed's F1
    from both starts (eval_results.json) and their difference, the means, the seeds' spread, the
    all-empty answers' F1 (the dev file's unanswerable share), a warning for each run that did
    not learn to answer, and the verdict the report's rule gives those numbers. Returns the
    titles of the comparisons it checked, in order."""
    from albert.tasks.squad_options import against_empty_answers

    text = text[text.rindex("=== pretrained vs from scratch"):]
    with open(os.path.join(out, "squad_data", "dev-v2.0.json"), encoding="utf-8") as f:
        questions = [qa for _, _, qa in _questions(json.load(f))]
    empty = 100 * sum(qa["is_impossible"] for qa in questions) / len(questions)
    near = lambda value: pytest.approx(value, abs=0.005 + 1e-9)  # noqa: E731  (printed .2f)
    checked = []
    for folder, title in REPORTS:
        if f"=== {title}: " not in text:
            continue
        checked.append(title)
        section = _section(text, title)
        assert section.startswith(f"=== {title}: {len(questions)} dev questions,"), section
        results = {}
        for name in os.listdir(os.path.join(out, folder)):
            run = re.fullmatch(r"(pretrained|scratch)-seed(\d+)", name)
            if run:
                with open(os.path.join(out, folder, name, "eval_results.json"),
                          encoding="utf-8") as f:
                    results[run[1], int(run[2])] = json.load(f)
        assert all(r["total"] == len(questions) for r in results.values())
        rows = re.findall(rf"^(\d+)\s+{NUMBER}\s+{NUMBER}\s+{NUMBER}$", section, re.MULTILINE)
        seeds = [int(row[0]) for row in rows]
        assert seeds == sorted({seed for _, seed in results}) and len(seeds) >= 2, section
        pretrained = [results["pretrained", seed]["f1"] for seed in seeds]
        scratch = [results["scratch", seed]["f1"] for seed in seeds]
        differences = [p - s for p, s in zip(pretrained, scratch, strict=True)]
        for row, p, s in zip(rows, pretrained, scratch, strict=True):
            assert [float(x) for x in row[1:]] == [near(p), near(s), near(p - s)], row
        gain = sum(differences) / len(seeds)
        spread = max(max(pretrained) - min(pretrained), max(scratch) - min(scratch))
        assert _number(rf"^mean\s+{NUMBER}\s+{NUMBER}\s+{NUMBER}\s+\(seeds' spread "
                       rf"{NUMBER} F1\)", section) == [
            near(sum(pretrained) / len(seeds)), near(sum(scratch) / len(seeds)), near(gain),
            near(spread)]
        assert _number(rf"^all-empty answers {NUMBER} F1$", section) == [near(empty)]
        unlearned = {key for key, r in results.items()
                     if against_empty_answers(r["f1"], r.get("HasAns_f1", r["f1"]), empty,
                                              r["total"])}
        assert set(re.findall(r"^warning: the fine-tune from (\w+) \(seed (\d+)\)", section,
                              re.MULTILINE)) == {(start, str(seed)) for start, seed in unlearned}
        [verdict] = re.findall(r"^verdict: (.*)$", section, re.MULTILINE)
        # The report's rule: no verdict from a run that did not learn to answer; a mean
        # difference is read only beyond the bar (the spread, at least one question's worth),
        # and a side only when every seed went that way.
        bar = max(spread, 100 / len(questions))
        if unlearned:
            expected = "cannot tell: the fine-tune from "
        elif abs(gain) <= bar:
            expected = "cannot tell: "
        elif gain > 0:
            expected = "pretraining helped: " if min(differences) > 0 else "not shown: "
        else:
            expected = ("pretraining did not help here: " if max(differences) < 0 else
                        "cannot tell: ")
        assert verdict.startswith(expected), (expected, verdict)
        assert unlearned or f"{gain:+.2f} F1 on average" in verdict, verdict
    return checked


def test_the_report_check_reads_a_report_against_its_runs(tmp_path, capsys):
    """check_report on a hand-built demo folder (report.main's own output): it passes the
    report as printed, and fails when a run's score, the verdict or a warning disagrees."""
    from albert.demo import report

    dev = {"version": "v2.0", "data": [{"title": "t", "paragraphs": [{
        "context": "mira owns the boat.", "qas": [
            {"id": f"q{i}", "question": f"who {i}?", "is_impossible": i % 4 == 3,
             "answers": [] if i % 4 == 3 else [{"text": "mira", "answer_start": 0}]}
            for i in range(8)]}]}]}
    (tmp_path / "squad_data").mkdir()
    (tmp_path / "squad_data" / "dev-v2.0.json").write_text(json.dumps(dev))
    pre = tmp_path / "pretraining"
    (pre / "logs").mkdir(parents=True)
    (pre / "logs" / "metrics.jsonl").write_text("".join(
        json.dumps({"split": split, "step": 10, "mlm_acc": 0.2, "sop_acc": 0.6}) + "\n"
        for split in ("train", "val")))
    (pre / "baselines.json").write_text(json.dumps({
        "train": {"mlm_unigram_acc": 0.05, "pairs": 100},
        "validation": {"mlm_unigram_acc": 0.05, "pairs": 100}}))
    (pre / "seconds").write_text("5\n")

    def runs(folder, table):
        for (start, seed), f1 in table.items():
            run = tmp_path / folder / f"{start}-seed{seed}"
            (run / "logs").mkdir(parents=True)
            (run / "eval_results.json").write_text(json.dumps({
                "f1": f1, "exact": f1, "total": 8, "HasAns_f1": f1, "HasAns_total": 6,
                "NoAns_total": 2}))
            (run / "predictions.json").write_text(json.dumps({qa["id"]: "mira" for _, _, qa
                                                              in _questions(dev)}))
            (run / "logs" / "metrics.jsonl").write_text(
                json.dumps({"split": "eval", "step": 5, "f1": f1}) + "\n")

    # All the questions: a help beyond one question's worth (12.5 F1 of 8); the tenth: a run
    # at the all-empty answers (25.00 F1), so no verdict.
    runs("finetune", {("pretrained", 3): 80.0, ("pretrained", 4): 78.0, ("scratch", 3): 50.0,
                      ("scratch", 4): 55.0})
    runs("finetune_tenth", {("pretrained", 3): 60.0, ("pretrained", 4): 62.5,
                            ("scratch", 3): 25.0, ("scratch", 4): 50.0})
    (tmp_path / "finetune_tenth" / "scratch-seed3" / "eval_results.json").write_text(json.dumps(
        {"f1": 25.0, "exact": 25.0, "total": 8, "HasAns_f1": 0.0, "HasAns_total": 6,
         "NoAns_total": 2}))
    assert report.main(["--demo_dir", str(tmp_path), "--seeds", "3", "4", "--no_picture"]) == 0
    printed = "=== pretrained vs from scratch ===\n" + capsys.readouterr().out
    assert "verdict: pretraining helped: " in printed
    assert "verdict: cannot tell: the fine-tune from scratch (seed 3) learned nothing" in printed
    assert check_report(printed, str(tmp_path)) == [title for _, title in REPORTS]

    for wrong in (printed.replace("verdict: pretraining helped: +26.50",
                                  "verdict: cannot tell: +26.50"),
                  printed.replace(" 80.00 ", " 81.00 ", 1),
                  re.sub(r"^warning: .*\n", "", printed, flags=re.MULTILINE)):
        assert wrong != printed
        with pytest.raises(AssertionError):
            check_report(wrong, str(tmp_path))
    # The tenth again, a gain of 5.00 beyond a spread of 1.00 but within one question's worth.
    for (start, seed), f1 in {("pretrained", 3): 60.0, ("pretrained", 4): 61.0,
                              ("scratch", 3): 55.0, ("scratch", 4): 56.0}.items():
        (tmp_path / "finetune_tenth" / f"{start}-seed{seed}" / "eval_results.json").write_text(
            json.dumps({"f1": f1, "exact": f1, "total": 8, "HasAns_f1": f1, "NoAns_total": 2}))
    assert report.main(["--demo_dir", str(tmp_path), "--seeds", "3", "4", "--no_picture"]) == 0
    again = "=== pretrained vs from scratch ===\n" + capsys.readouterr().out
    assert "verdict: cannot tell: +5.00 F1 on average is within the seeds' spread of 1.00" in again
    assert check_report(again, str(tmp_path)) == [title for _, title in REPORTS]
    # A run's file that says another score than the report printed.
    (tmp_path / "finetune" / "scratch-seed4" / "eval_results.json").write_text(json.dumps(
        {"f1": 56.0, "exact": 56.0, "total": 8, "HasAns_f1": 56.0, "NoAns_total": 2}))
    with pytest.raises(AssertionError):
        check_report(printed, str(tmp_path))


def test_quick_demo_scores_are_the_official_scores_of_each_runs_predictions(quick_demo):
    """Every fine-tune's eval_results.json, which the report prints (check_report reads the
    report against these files), is the official scorer's result on that run's own
    predictions.json over the whole dev file: the printed figure is what this run predicted,
    not a number carried over from another run or another file."""
    _, out = quick_demo
    with open(os.path.join(out, "squad_data", "dev-v2.0.json"), encoding="utf-8") as f:
        dev = json.load(f)
    questions = sum(1 for _ in _questions(dev))
    runs = 0
    for folder in FOLDERS:
        for start in ("pretrained", "scratch"):
            for seed in SEEDS:
                run = os.path.join(out, folder, f"{start}-seed{seed}")
                with open(os.path.join(run, "eval_results.json"), encoding="utf-8") as f:
                    written = json.load(f)
                with open(os.path.join(run, "predictions.json"), encoding="utf-8") as f:
                    rescored = evaluate(dev, json.load(f))
                assert rescored["total"] == written["total"] == questions
                for key in ("exact", "f1", "HasAns_f1", "NoAns_f1"):
                    assert rescored[key] == pytest.approx(written[key], abs=1e-6), (run, key)
                runs += 1
    assert runs == 8


def test_quick_demo_answers_shown_are_the_runs_predictions(quick_demo):
    stdout, out = quick_demo
    with open(os.path.join(out, "squad_data", "dev-v2.0.json"), encoding="utf-8") as f:
        first = list(_questions(json.load(f)))[:4]
    section = _section(stdout, "the first 4 dev questions")
    assert re.findall(r"^question:\s+(.*)$", section, re.MULTILINE) == [
        qa["question"] for _, _, qa in first]
    for start in ("pretrained", "scratch"):
        path = os.path.join(out, "finetune", f"{start}-seed{SEEDS[0]}", "predictions.json")
        with open(path, encoding="utf-8") as f:
            predictions = json.load(f)
        assert re.findall(rf"^{start}:\s+(.*)$", section, re.MULTILINE) == [
            predictions[qa["id"]] or "(no answer)" for _, _, qa in first]


def test_quick_demo_pretraining_figures_agree_with_its_logs(quick_demo):
    stdout, out = quick_demo
    metrics = os.path.join(out, "pretraining", "logs", "metrics.jsonl")
    train, val = _last_metrics(metrics, "train"), _last_metrics(metrics, "val")
    mlm = _number(rf"^MLM accuracy\s+train {NUMBER}\s+held-out {NUMBER}\s+"
                  rf"\(always the most frequent masked token: train {NUMBER}\s+held-out {NUMBER}",
                  stdout)
    sop = _number(rf"^SOP accuracy\s+train {NUMBER}\s+held-out {NUMBER}", stdout)
    assert mlm[:2] == pytest.approx([train["mlm_acc"], val["mlm_acc"]], abs=6e-5)
    assert sop == pytest.approx([train["sop_acc"], val["sop_acc"]], abs=6e-5)
    # The unigram baseline, counted again from the held-out records.
    import tensorflow as tf

    from albert.data.reader import pretraining_feature_spec

    with open(os.path.join(out, "pretraining", "baselines.json"), encoding="utf-8") as f:
        lengths = json.load(f)["shapes"]
    spec = pretraining_feature_spec(lengths["max_seq_length"], lengths["max_predictions_per_seq"])
    counts = collections.Counter()
    files = sorted(glob.glob(os.path.join(out, "pretraining_data", "validation", "*.tfrecord")))
    for record in tf.data.TFRecordDataset(files):
        example = tf.io.parse_single_example(record, spec)
        ids, weights = example["masked_lm_ids"].numpy(), example["masked_lm_weights"].numpy()
        counts.update(int(i) for i, w in zip(ids, weights, strict=True) if w > 0)
    assert mlm[3] == pytest.approx(counts.most_common(1)[0][1] / sum(counts.values()), abs=6e-5)


def test_quick_demo_compares_a_pretrained_start_with_a_fresh_one(quick_demo):
    """Each pair of fine-tunes differs only in its starting weights: one loaded the pretraining's
    final checkpoint, the other nothing, and both ran the same number of updates."""
    _, out = quick_demo
    final = os.path.join(out, "pretraining", "checkpoints", "final")
    for folder in FOLDERS:
        for seed in SEEDS:
            records = {}
            for start in ("pretrained", "scratch"):
                path = os.path.join(out, folder, f"{start}-seed{seed}", "checkpoints", "run.json")
                with open(path, encoding="utf-8") as f:
                    records[start] = json.load(f)
                assert records[start]["finished"]
            started = records["pretrained"]["started_from"]
            assert started["load_from"] == "pretrained"
            assert os.path.samefile(started["checkpoint_path"], final)
            assert records["scratch"]["started_from"]["load_from"] == "scratch"
            assert records["scratch"]["started_from"]["checkpoint_path"] is None
            for key in ("total_steps", "batch_plan"):
                assert records["pretrained"][key] == records["scratch"][key]
            # Their whole specs differ only in where they started: same data, vocabulary,
            # features, optimizer, schedule, seed and model configuration.
            pretrained, scratch = records["pretrained"]["spec"], records["scratch"]["spec"]
            assert [k for k in pretrained if pretrained[k] != scratch[k]] == ["started_from"]
            assert set(pretrained) == set(scratch)


def test_few_labels_needs_a_finished_demo_of_the_same_kind(quick_demo, tmp_path):
    """Run before the demo, or against a quick demo's output without DEMO_QUICK, with another
    seed or other epochs, the second part says what to do in one line instead of fine-tuning
    from nothing, mixing budgets or comparing seeds the demo never ran."""
    proc = _demo(tmp_path / "none", "few_labels")
    assert proc.returncode == 2
    assert "run scripts/demo.sh first" in proc.stderr and "Traceback" not in proc.stderr
    _, out = quick_demo
    proc = _demo(out, "few_labels", quick="0")
    assert proc.returncode == 2
    assert ("ran with DEMO_QUICK=1 DEMO_SEED=3 FINETUNE_EPOCHS=1, this with DEMO_QUICK=0 "
            "DEMO_SEED=3 FINETUNE_EPOCHS=4: use the same settings") in proc.stderr
    proc = _demo(out, "few_labels", seed="5")
    assert proc.returncode == 2 and "this with DEMO_QUICK=1 DEMO_SEED=5 " in proc.stderr
    proc = _demo(out, "few_labels", FINETUNE_EPOCHS="2")
    assert proc.returncode == 2 and "this with DEMO_QUICK=1 DEMO_SEED=3 FINETUNE_EPOCHS=2" in (
        proc.stderr)
    proc = _demo(out, "few_label")
    assert proc.returncode == 2 and "unknown part 'few_label'" in proc.stderr
    # The sweep scores on the demo's held-out records: it needs the same finished demo.
    proc = _demo(tmp_path / "none", "sweep")
    assert proc.returncode == 2 and "run scripts/demo.sh first" in proc.stderr
    proc = _demo(out, "sweep", seed="5")
    assert proc.returncode == 2 and "this with DEMO_QUICK=1 DEMO_SEED=5 " in proc.stderr


def test_quick_sweep_scores_each_choice_on_the_demos_held_out_records(quick_demo):
    """`scripts/demo.sh sweep`: its first row is the demo's own pretraining run again (the same
    steps, seed and records give the same held-out figures, losses included), every row is what
    its run logged, every run was scored on the demo's held-out records (the same
    most-frequent-token baseline, the same masked tokens), the rate variant ran at its rate and
    the longer variant trained on records of its own written with the demo's settings but for
    the shape, so holding out the same documents, and was scored on the demo's held-out records
    padded to its shape."""
    import tensorflow as tf

    _, out = quick_demo
    proc = _demo(out, "sweep")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    with open(os.path.join(out, "sweep", "results.json"), encoding="utf-8") as f:
        rows = {r["variant"]: r for r in json.load(f)}
    assert list(rows) == ["demo", "lr0.02", "seq2x"]
    demo = _last_metrics(os.path.join(out, "pretraining", "logs", "metrics.jsonl"), "val")
    # The losses too: after a few steps every run may still answer the most frequent token.
    figures = ("mlm_acc", "sop_acc", "mlm_loss", "sop_loss")
    assert [rows["demo"][k] for k in figures] == [demo[k] for k in figures]
    assert rows["lr0.02"]["mlm_loss"] != demo["mlm_loss"]
    with open(os.path.join(out, "pretraining", "baselines.json"), encoding="utf-8") as f:
        unigram = json.load(f)["validation"]["mlm_unigram_acc"]
    with open(os.path.join(out, "sweep", "table.md"), encoding="utf-8") as f:
        table = f.read()
    assert table.strip() in proc.stdout
    for name, row in rows.items():
        run = os.path.join(out, "sweep", name)
        last = _last_metrics(os.path.join(run, "logs", "metrics.jsonl"), "val")
        assert [row[k] for k in figures] == [last[k] for k in figures]
        line = next(t for t in table.splitlines() if t.startswith(f"| {name} |"))
        assert f"| {row['mlm_acc']:.4f} |" in line and f"| {row['sop_acc']:.4f} |" in line
        if name != "demo":
            assert f"| {row['mlm_acc'] - rows['demo']['mlm_acc']:+.4f} |" in line
        with open(os.path.join(run, "pretraining.log"), encoding="utf-8") as f:
            assert f"baseline unigram MLM accuracy {unigram:.4f}" in f.read()
        with open(os.path.join(run, "checkpoints", "run.json"), encoding="utf-8") as f:
            spec = json.load(f)["spec"]
        assert spec["learning_rate"] == (0.02 if name == "lr0.02" else 0.01)
        assert spec["total_steps"] == demo["step"] and spec["seed"] == 3
        assert all(("/sweep/seq2x/" in d) == (name == "seq2x") for d in spec["data"])
        assert spec["model_config"]["max_position_embeddings"] >= 128
    with open(os.path.join(out, "sweep", "seq2x", "pretraining_data", "summary.json"),
              encoding="utf-8") as f:
        own = json.load(f)
    with open(os.path.join(out, "pretraining_data", "summary.json"), encoding="utf-8") as f:
        demos = json.load(f)
    assert (own["settings"]["max_seq_length"], own["settings"]["max_predictions_per_seq"]) == (
        2 * demos["settings"]["max_seq_length"], 2 * demos["settings"]["max_predictions_per_seq"])
    # The held-out split is drawn per document from the same corpus and fraction, so the same
    # documents are left out (its pairs differ: packing to another length makes other pairs).
    assert [k for k in own["settings"] if own["settings"][k] != demos["settings"].get(k)] == [
        "output_dir", "max_seq_length", "max_predictions_per_seq"]
    # Scored on the demo's held-out records, padded to the variant's shape, record for record.
    with open(os.path.join(out, "sweep", "seq2x", "checkpoints", "run.json"),
              encoding="utf-8") as f:
        command = json.load(f)["command"]
    padded = command[command.index("--val_dir") + 1]
    assert padded.endswith("/sweep/seq2x/demo_validation_padded")
    assert command[command.index("--max_seq_length") + 1] == str(
        own["settings"]["max_seq_length"])
    assert sorted(os.listdir(padded)) == sorted(os.path.basename(p)
                                                for p in demos["validation_files"])
    for name in os.listdir(padded):
        assert (sum(1 for _ in tf.data.TFRecordDataset(os.path.join(padded, name)))
                == sum(1 for _ in tf.data.TFRecordDataset(os.path.join(
                    out, "pretraining_data", "validation", name))))
    # The noise the table states is that of the held-out masked tokens, counted here apart.
    masked = 0
    for raw in tf.data.TFRecordDataset(demos["validation_files"]):
        example = tf.train.Example.FromString(raw.numpy())
        masked += sum(w > 0 for w in example.features.feature["masked_lm_weights"].float_list.value)
    assert f"({masked} masked tokens)" in table
    p = rows["demo"]["mlm_acc"]
    assert f"under {2 * (2 * p * (1 - p) / masked) ** 0.5:.4f} is within noise" in table


def test_quick_demo_pretrains_on_the_registry_and_asks_across_held_out_wordings(quick_demo):
    """The comparison is on the paraphrase set: the pretraining text holds every wording, the
    fine-tuning split none of the held-out ones, and the dev split asks with them."""
    from albert.demo import facts

    _, out = quick_demo
    held = [p for r in facts.RELATIONS for p in vars(r.wordings[facts.HELD_OUT]).values()]
    find = lambda text: {p for p in held if re.search(rf"\b{p}\b", text)}  # noqa: E731
    with open(os.path.join(out, "corpus.txt"), encoding="utf-8") as f:
        corpus = f.read()
    assert "In other words," in corpus and find(corpus) == set(held)
    splits = {}
    for name in ("train", "dev"):
        with open(os.path.join(out, "squad_data", f"{name}-v2.0.json"), encoding="utf-8") as f:
            splits[name] = list(_questions(json.load(f)))
    assert not any(find(qa["question"] + context) for _, context, qa in splits["train"])
    assert all(find(qa["question"] + context) for _, context, qa in splits["dev"])


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v"]))
