"""albert.demo.sweep: the table's differences are against the demo's row, its noise is that of
the held-out masked tokens, and a flag it cannot use gets one line before anything runs (the
runs themselves: tests/scripts/test_demo.py's quick sweep)."""

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
    for variant in sweep.VARIANTS[1:]:
        assert bool(variant.pretraining) != bool(variant.records), variant.name
        assert variant.change and variant.change != sweep.VARIANTS[0].change


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
