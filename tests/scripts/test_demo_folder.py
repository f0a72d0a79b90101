"""scripts/demo.sh and the folder it writes to: it empties that folder on every run, so it must
take only a folder it made (or an empty one), refuse anything else in one line before it deletes
or installs anything, and never delete through a symbolic link.

The refusals come before setup, so these tests run no demo. The two that show a folder the demo
may take being emptied stop the demo as soon as it starts its first step (the emptying is done
by then); the quick demo's own folder is checked in test_demo.py, from its fixture.
"""

import contextlib
import os
import re
import signal
import subprocess

import pytest

pytestmark = pytest.mark.e2e

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEMO = os.path.join(REPO_ROOT, "scripts", "demo.sh")
SETTINGS = "DEMO_QUICK=1 DEMO_SEED=3 FINETUNE_EPOCHS=1"


def _env(out, **more):
    return dict(os.environ, DEMO_QUICK="1", DEMO_SEED="3", DEMO_DIR=str(out), **more)


def _demo(out, *part, **more):
    return subprocess.run(["bash", DEMO, *part], env=_env(out, **more), cwd=REPO_ROOT,
                          capture_output=True, text=True, timeout=300)


def _refused(proc, *words):
    """Exit 2, one line on stderr naming `words`, and nothing run (not even setup)."""
    assert proc.returncode == 2, proc.stdout[-2000:] + proc.stderr[-2000:]
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("scripts/demo.sh"), lines[0]
    for word in words:
        assert word in lines[0], lines[0]
    assert proc.stdout == ""  # setup.sh prints "[setup] ..." first: it never started
    return lines[0]


def _write(path, text="precious\n"):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


def _read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def _finished_demo(out, mark=True):
    """The files the parts after the demo look for, as a quick demo with seed 3 leaves them."""
    _write(os.path.join(out, "pretraining", "checkpoints", "final", "config.json"), "{}\n")
    _write(os.path.join(out, "demo_settings"), SETTINGS + "\n")
    _write(os.path.join(out, "corpus.txt"), "the demo's corpus\n")
    if mark:
        _write(os.path.join(out, ".albert-demo"), "")


def test_demo_refuses_a_folder_it_did_not_make(tmp_path):
    """The report's case: DEMO_DIR=~/project holding thesis.txt. Refused, naming the folder and
    the file; nothing in it deleted. A folder holding only names the demo writes is not taken
    as the demo's either, without its marker or a finished demo's settings (a corpus.txt of
    one's own)."""
    project = tmp_path / "project"
    _write(project / "thesis.txt")
    _write(project / "corpus.txt")
    line = _refused(_demo(project), str(project), "thesis.txt", "new or empty folder")
    assert "corpus.txt" not in line
    assert sorted(os.listdir(project)) == ["corpus.txt", "thesis.txt"]
    assert _read(project / "thesis.txt") == "precious\n"

    own = tmp_path / "own"
    _write(own / "corpus.txt", "my corpus\n")
    _refused(_demo(own), str(own), "not made by the demo", "remove this one yourself")
    assert os.listdir(own) == ["corpus.txt"] and _read(own / "corpus.txt") == "my corpus\n"
    # Relative, as a user types it: the same folder, the same refusal.
    proc = subprocess.run(["bash", DEMO], env=_env("project"), cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)
    _refused(proc, str(project), "thesis.txt")


def test_demo_refuses_a_link_and_a_file(tmp_path):
    """A DEMO_DIR that is a symbolic link (with or without a trailing slash) is refused: the
    folder it points to keeps its files. A DEMO_DIR naming a file is refused; the file stays."""
    target = tmp_path / "elsewhere"
    _write(target / "thesis.txt")
    _write(target / ".albert-demo", "")  # even a folder the demo made: not through a link
    link = tmp_path / "link"
    link.symlink_to(target)
    for name in (str(link), str(link) + "/"):
        _refused(_demo(name), str(link), "symbolic link", str(target))
        assert sorted(os.listdir(target)) == [".albert-demo", "thesis.txt"]
    paper = tmp_path / "paper.txt"
    _write(paper)
    _refused(_demo(paper), str(paper), "is a file, not a folder")
    assert _read(paper) == "precious\n"
    # Every part checks it.
    for part in ("few_labels", "sweep"):
        _refused(_demo(paper, part), str(paper), "is a file")
        _refused(_demo(link, part), "symbolic link")
    assert _read(target / "thesis.txt") == "precious\n"


def test_demo_refuses_words_it_does_not_know_before_anything_else(tmp_path):
    """`scripts/demo.sh all extra` ran the demo and emptied its folder: refused in one line,
    before the folder is looked at (here a demo's own, which a run would empty)."""
    out = tmp_path / "demo_output"
    _finished_demo(out)
    _refused(_demo(out, "all", "extra"), "unexpected 'extra' after 'all'")
    _refused(_demo(out, "sweep", "lr0.02", "seq2x"), "unexpected 'lr0.02 seq2x' after 'sweep'")
    # An unknown word is named before a bad DEMO_DIR is.
    paper = tmp_path / "paper.txt"
    _write(paper)
    line = _refused(_demo(paper, "few_label"), "unknown part 'few_label'")
    assert "paper.txt" not in line
    assert _read(out / "corpus.txt") == "the demo's corpus\n"


def test_demo_refuses_a_folder_it_cannot_make(tmp_path):
    """bash's own mkdir message and exit 1 before: one line naming DEMO_DIR and why, exit 2."""
    paper = tmp_path / "paper.txt"
    _write(paper)
    _refused(_demo(paper / "demo"), f"DEMO_DIR {paper / 'demo'} cannot be made (Not a directory)")
    # sysfs takes no new folder, for root as for anyone.
    line = _refused(_demo("/sys/albert-demo-test"),
                    "DEMO_DIR /sys/albert-demo-test cannot be made (")
    assert not re.search(r"mkdir:|line \d+", line)


def test_later_parts_work_only_in_the_demos_folder(tmp_path):
    """few_labels and sweep replace folders of their own inside DEMO_DIR: not in a folder the
    demo did not make, even if it looks like a finished demo."""
    out = tmp_path / "project"
    _finished_demo(out, mark=False)
    _write(out / "thesis.txt")
    _write(out / "squad_tenth" / "mine.json")
    for part in ("few_labels", "sweep"):
        _refused(_demo(out, part), "not made by the demo", "thesis.txt")
    assert _read(out / "thesis.txt") == "precious\n"
    assert _read(out / "squad_tenth" / "mine.json") == "precious\n"


def test_sweep_with_a_mistyped_variant_keeps_the_previous_sweep(tmp_path):
    """SWEEP_VARIANTS with a typo: the sweep's own one-line refusal (exit 2), and the previous
    sweep's table and runs still there. This one runs setup (seconds when up to date): the
    variant names are the sweep module's."""
    out = tmp_path / "demo_output"
    _finished_demo(out)
    _write(out / "sweep" / "table.md", "| demo | ... |\n")
    _write(out / "sweep" / "lr0.02" / "logs" / "metrics.jsonl", "{}\n")
    proc = _demo(out, "sweep", SWEEP_VARIANTS="demo bogus_name")
    assert proc.returncode == 2, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "--variants: unknown bogus_name" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert _read(out / "sweep" / "table.md") == "| demo | ... |\n"
    assert _read(out / "sweep" / "lr0.02" / "logs" / "metrics.jsonl") == "{}\n"


def _start_then_stop(out):
    """Run the demo until it announces its first step (its folder is emptied by then), then
    stop it and everything it started: (what it printed)."""
    proc = subprocess.Popen(["bash", DEMO], env=_env(out), cwd=REPO_ROOT, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            start_new_session=True)
    printed = []
    try:
        for line in proc.stdout:
            printed.append(line)
            if line.startswith("=== 1/6"):
                break
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=60)
        proc.stdout.close()
    assert printed and printed[-1].startswith("=== 1/6"), "".join(printed)[-3000:]
    return "".join(printed)


def test_demo_empties_its_own_folder_and_never_through_a_link(tmp_path):
    """A folder the demo made is emptied on a re-run, but a link in it goes, not what it points
    to: a user's folder linked in as `finetune`, a file linked in as `corpus.txt`, a link deeper
    down. Files of others in it (a user's notes, Finder's .DS_Store) stay: the demo deletes only
    its own names."""
    outside = tmp_path / "outside"
    _write(outside / "keep" / "thesis.txt")
    _write(outside / "paper.txt")
    out = tmp_path / "demo_output"
    _finished_demo(out)
    _write(out / "vocab" / "spiece.model", "stale\n")
    (out / "finetune").symlink_to(outside / "keep")
    (out / "vocab" / "deeper").symlink_to(outside)
    os.remove(out / "corpus.txt")
    (out / "corpus.txt").symlink_to(outside / "paper.txt")
    _write(out / "notes.md")
    _write(out / ".DS_Store", "finder\n")
    _start_then_stop(out)
    assert _read(outside / "keep" / "thesis.txt") == "precious\n"
    assert _read(outside / "paper.txt") == "precious\n"
    left = set(os.listdir(out)) - {"corpus.txt"}  # the first step may have begun writing it
    assert left == {".albert-demo", "notes.md", ".DS_Store"}
    assert _read(out / "notes.md") == "precious\n"
    assert not os.path.islink(out / "corpus.txt")


def test_demo_takes_an_older_demos_folder(tmp_path):
    """demo_output/ from a demo.sh that wrote no marker: a finished demo's names and settings
    and nothing else. Taken, emptied and marked."""
    out = tmp_path / "demo_output"
    _finished_demo(out, mark=False)
    _write(out / "finetune" / "pretrained-seed3.log", "old\n")
    printed = _start_then_stop(out)
    assert "[setup]" in printed
    assert set(os.listdir(out)) - {"corpus.txt"} == {".albert-demo"}


@pytest.mark.parametrize("variants, steps, keeps", [
    (["demo", "bogus_name"], "200", True),   # a mistyped name
    (["demo"], "50", True),                  # fewer steps than the warmup
    (["demo"], "200", False),
])
def test_sweep_fresh_clears_only_after_every_check(tmp_path, monkeypatch, variants, steps, keeps):
    """albert.demo.sweep --fresh (what `scripts/demo.sh sweep` passes) removes the previous
    sweep only once every flag is checked, and then all of it; a link among its runs goes, not
    the folder it points to. In process, the runs stubbed: the order is what is tested."""
    from albert.demo import sweep

    demo = tmp_path / "demo_output"
    (demo / "pretraining_data" / "validation").mkdir(parents=True)
    _write(demo / "pretraining" / "baselines.json",
           '{"validation": {"mlm_unigram_acc": 0.1}}\n')
    _write(demo / "sweep" / "table.md", "old table\n")
    _write(demo / "sweep" / "lr0.02" / "logs" / "metrics.jsonl", "{}\n")
    _write(tmp_path / "outside" / "thesis.txt")
    (demo / "sweep" / "demo").symlink_to(tmp_path / "outside")
    ran = []

    def run_variant(variant, demo_dir, out, args):
        previous = os.path.join(demo_dir, "sweep")
        ran.append((variant.name, os.listdir(previous) if os.path.lexists(previous) else None))
        sweep.clear(os.path.join(out, variant.name))
        os.makedirs(os.path.join(out, variant.name))
        return {"variant": variant.name, "change": variant.change, "step": 1, "mlm_acc": 0.2,
                "sop_acc": 0.5, "mlm_loss": 1.0, "sop_loss": 0.7, "seconds": 1.0}

    monkeypatch.setattr(sweep, "run_variant", run_variant)
    monkeypatch.setattr(sweep, "masked_token_count", lambda *a: 100)
    argv = ["--demo_dir", str(demo), "--steps", steps, "--fresh", "--variants", *variants]
    with pytest.raises(SystemExit) if keeps else contextlib.nullcontext() as refused:
        sweep.main(argv)
    if keeps:
        assert refused.value.code == 2
        assert _read(demo / "sweep" / "table.md") == "old table\n"
        assert _read(demo / "sweep" / "lr0.02" / "logs" / "metrics.jsonl") == "{}\n"
        assert not ran
    else:
        assert ran == [("demo", None)]  # the whole previous sweep gone before the first run
        assert sorted(os.listdir(demo / "sweep")) == ["demo", "results.json", "table.md"]
        assert not os.path.islink(demo / "sweep" / "demo")
    assert _read(tmp_path / "outside" / "thesis.txt") == "precious\n"

