"""albert.demo.sweep: the table's differences are against the demo's row, its noise is that of
the held-out masked tokens, and a flag it cannot use gets one line before anything runs (the
runs themselves: tests/scripts/test_demo.py's quick sweep)."""

import os
import subprocess
import sys

import pytest

from albert.demo import sweep


def _row(name, mlm, sop=0.6, seconds=10.0):
    return {"variant": name, "change": sweep.BY_NAME[name].change, "step": 1000,
            "mlm_acc": mlm, "sop_acc": sop, "mlm_loss": 5.0, "sop_loss": 0.5, "seconds": seconds}


def test_each_row_is_read_against_the_demos_and_the_noise_of_its_tokens():
    rows = [_row("lr0.003", 0.1134), _row("demo", 0.1547, 0.7181, 275.4), _row("lr0.02", 0.1700)]
    text = sweep.table(rows, {"validation": {"mlm_unigram_acc": 0.0715}}, 15000, 1000)
    lines = text.splitlines()
    assert lines[0].startswith("1000 updates each, scored on the demo's held-out records "
                               "(15000 masked tokens); the most frequent token scores 0.0715")
    # Two standard errors of a difference of two accuracies near 0.1547 on 15,000 tokens.
    assert "under 0.0084 is within noise" in lines[0]
    body = {line.split(" | ")[0][2:]: line for line in lines if line.startswith("| ")}
    assert body["demo"] == "| demo | the demo's recipe | 0.1547 |  | 0.7181 | 275 |"
    assert "| 0.1134 | -0.0413 |" in body["lr0.003"]
    assert "| 0.1700 | +0.0153 |" in body["lr0.02"]


def test_the_noise_shrinks_with_the_tokens_and_is_undefined_without_them():
    assert sweep.noise(0.15, 60000) == pytest.approx(sweep.noise(0.15, 15000) / 2)
    assert sweep.noise(0.15, 0) != sweep.noise(0.15, 0)  # NaN: no tokens, no estimate


def test_every_variant_changes_one_thing_and_names_it():
    names = [v.name for v in sweep.VARIANTS]
    assert names[0] == "demo" and len(set(names)) == len(names)
    assert not sweep.VARIANTS[0].own_records
    for variant in sweep.VARIANTS[1:]:
        kinds = [bool(variant.pretraining), bool(variant.records), variant.length_factor != 1,
                 bool(variant.masked_share)]
        assert sum(kinds) == 1, variant.name
        assert variant.own_records == (not variant.pretraining), variant.name
        assert variant.change and variant.change != sweep.VARIANTS[0].change


def test_a_variants_masked_positions_grow_with_its_length_and_masking_rate():
    # The demo's 10 positions at 64 tokens hold its 15% (9.6 of 64): the cap binds alike.
    assert sweep.BY_NAME["demo"].shape(64, 10) == (64, 10)
    assert sweep.BY_NAME["ngram1"].shape(64, 10) == (64, 10)
    assert sweep.BY_NAME["seq2x"].shape(64, 10) == (128, 20)
    assert sweep.BY_NAME["mask0.25"].shape(64, 10) == (64, 17)
    assert sweep.BY_NAME["mask0.4"].shape(64, 10) == (64, 27)
    assert sweep.BY_NAME["mask0.4"].shape(64, 10)[1] >= 0.4 * 64


def test_without_the_demos_row_no_row_is_read_against_another():
    rows = [_row("mask0.25", 0.16), _row("seq2x", 0.18)]
    text = sweep.table(rows, {"validation": {"mlm_unigram_acc": 0.0715}}, 15000, 1000)
    body = [line for line in text.splitlines() if line.startswith("| mask") or
            line.startswith("| seq")]
    assert [line.split(" | ")[2:4] for line in body] == [["0.1600", ""], ["0.1800", ""]]


def test_a_variant_run_again_runs_afresh(monkeypatch, tmp_path):
    """The module run again over a finished sweep (no --fresh) runs each variant afresh: the
    variant's earlier records, finished checkpoint and logs are gone before its first command,
    so run_pretraining neither refuses that run nor takes it as this one, and the row is this
    run's. The commands are recorded here instead of run (the quick sweep runs them:
    tests/scripts/test_demo.py)."""
    import json

    demo = tmp_path / "demo"
    run_dir = demo / "sweep" / "ngram1"  # records of its own, in the demo's shape
    for stale in ("pretraining_data/train/part-00000-of-00004.tfrecord",
                  "checkpoints/final/config.json", "checkpoints/run.json", "pretraining.log"):
        (run_dir / stale).parent.mkdir(parents=True, exist_ok=True)
        (run_dir / stale).write_text("from the earlier sweep")
    (run_dir / "logs").mkdir()
    (run_dir / "logs" / "metrics.jsonl").write_text(json.dumps(
        {"split": "val", "step": 30, "mlm_acc": 0.5, "sop_acc": 0.5, "mlm_loss": 1.0,
         "sop_loss": 0.5}) + "\n")
    commands = []

    def recorded(cmd, log):
        left = sorted(str(p.relative_to(run_dir)) for p in run_dir.rglob("*"))
        commands.append((cmd[2], left))
        if cmd[2] == "albert.run_pretraining":
            logs = cmd[cmd.index("--log_dir") + 1]
            os.makedirs(logs, exist_ok=True)
            with open(os.path.join(logs, "metrics.jsonl"), "w", encoding="utf-8") as f:
                f.write(json.dumps({"split": "val", "step": 4, "mlm_acc": 0.25, "sop_acc": 0.5,
                                    "mlm_loss": 6.0, "sop_loss": 0.7}) + "\n")

    monkeypatch.setattr(sweep, "_run", recorded)
    args = sweep.build_parser().parse_args(["--demo_dir", str(demo), "--steps", "4",
                                            "--warmup_steps", "1"])
    row = sweep.run_variant(sweep.BY_NAME["ngram1"], str(demo), str(demo / "sweep"), args)
    assert commands == [("albert.create_pretraining_data", []), ("albert.run_pretraining", [])]
    assert (row["step"], row["mlm_acc"], row["mlm_loss"]) == (4, 0.25, 6.0)


def test_padded_held_out_records_score_the_same_tokens_the_same_way(sample_records, tmp_path):
    """A longer variant reads the demo's held-out records padded to its shape: a model's MLM
    and SOP figures on them equal its figures on the records as written."""
    import numpy as np
    from helpers import PREDS, SEQ

    from albert import AlbertConfig, AlbertForPreTraining
    from albert.data.reader import pretraining_dataset
    from albert.tasks.losses import pretraining_loss, pretraining_metrics

    files = sorted(str(p) for p in (sample_records / "validation").glob("*.tfrecord"))
    padded = sweep.pad_records(files, str(tmp_path / "padded"), 2 * SEQ, 17)
    assert [p.rsplit("/", 1)[1] for p in padded] == [f.rsplit("/", 1)[1] for f in files]
    config = AlbertConfig(vocab_size=2000, embedding_size=16, hidden_size=32,
                          num_attention_heads=4, intermediate_size=37, num_hidden_layers=2,
                          max_position_embeddings=2 * SEQ, hidden_dropout_prob=0.0,
                          attention_probs_dropout_prob=0.0)
    model = AlbertForPreTraining(config).build_for_config()
    rng = np.random.default_rng(0)  # weights far from a fresh start, so predictions vary
    for w in model.weights:
        w.assign(rng.normal(scale=0.5, size=w.shape).astype(w.dtype))

    def figures(paths, seq, preds):
        totals = {}
        for batch in pretraining_dataset(paths, 16, seq, preds, filesystem_prefix="/",
                                         training=False):
            assert batch["input_ids"].shape[1] == seq
            assert batch["masked_lm_positions"].shape[1] == preds
            _, sums = pretraining_loss(model, batch, training=False)
            for k, v in sums.items():
                totals[k] = totals.get(k, 0.0) + float(v)
        return totals, pretraining_metrics(totals)

    (sums, written), (padded_sums, padded_figures) = (
        figures(files, SEQ, PREDS), figures(padded, 2 * SEQ, 17))
    assert sums["mlm_count"] > 50 and padded_sums["mlm_count"] == sums["mlm_count"]
    assert 0 < written["mlm_acc"] < 1 and padded_figures["mlm_acc"] == written["mlm_acc"]
    assert padded_figures["sop_acc"] == written["sop_acc"]
    for name in ("mlm_loss", "sop_loss"):
        assert padded_figures[name] == pytest.approx(written[name], rel=1e-5), name
    with pytest.raises(SystemExit, match="more than the 5 of the shape"):
        sweep.pad_records(files, str(tmp_path / "short"), SEQ, 5)


@pytest.mark.e2e  # the command in a process of its own
@pytest.mark.parametrize("argv, message", [
    (["--variants", "demo", "lr9"], "--variants: unknown lr9; expected some of demo, "),
    (["--steps", "100"], "--steps 100: expected more than --warmup_steps (100)"),
    ([], "no finished demo there"),
])
def test_a_flag_it_cannot_use_gets_one_line(tmp_path, argv, message):
    proc = subprocess.run([sys.executable, "-m", "albert.demo.sweep", "--demo_dir",
                           str(tmp_path), *argv], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert message in proc.stderr and "Traceback" not in proc.stderr
    assert not (tmp_path / "sweep").exists()
