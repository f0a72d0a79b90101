"""The shipped pretraining scripts act on a run's interrupted status, 143 (issue 50 item 2):
they stop (two-phase: phase 2 never starts from an unfinished phase 1), pass 143 on with one line
saying how to resume, read it back from horovodrun (which exits 1 whatever its ranks did), and
pass a stop sent to the script on to the trainer. The scripts run as shipped, copied beside a
fake .venv whose python and horovodrun record their calls: no TensorFlow, a second each."""

import os
import shutil
import signal
import subprocess
import time

import pytest
from helpers import REPO_ROOT

pytestmark = pytest.mark.e2e  # bash processes, though cheap ones

SCRIPTS = ("lib.sh", "pretrain_two_phase.sh", "pretrain_one_box.sh", "pretrain_multi_host.sh")

# The trainer: TRAINER_STATUS is its exit status; create_pretraining_data writes its summary.
FAKE_PYTHON = r'''#!/usr/bin/env bash
echo "python $*" >> "$CALLS"
case " $* " in
  *" -m albert.create_pretraining_data "*)
    while [ $# -gt 0 ]; do [ "$1" = --output_dir ] && out=$2; shift; done
    mkdir -p "$out" && echo '{}' > "$out/summary.json" ;;
  *" --plan_only "*) ;;
  *" -m albert.run_pretraining "*) exit "${TRAINER_STATUS:-0}" ;;
esac
'''

# horovodrun: 1 when a rank failed, its status named in the last line, as the real one does.
# WAIT_FOR_TERM: runs until SIGTERM, whose ranks then stop with 143.
FAKE_HOROVODRUN = r'''#!/usr/bin/env bash
echo "horovodrun $*" >> "$CALLS"
status=${TRAINER_STATUS:-0}
if [ -n "${WAIT_FOR_TERM:-}" ]; then
    trap 'echo "horovodrun got TERM" >> "$CALLS"; status=143' TERM
    echo started >> "$CALLS"
    while [ "$status" = 0 ]; do sleep 0.1; done
fi
if [ "$status" != 0 ]; then
    echo "RuntimeError: Horovod detected that one or more processes exited with non-zero" >&2
    printf 'Process name: 1\nExit code: %s\n\n' "$status" >&2
    exit 1
fi
'''


@pytest.fixture
def checkout(tmp_path):
    """A checkout of the scripts with the fake .venv/bin: (root, the calls file)."""
    root = tmp_path / "checkout"
    (root / "scripts").mkdir(parents=True)
    for name in SCRIPTS:
        shutil.copy(os.path.join(REPO_ROOT, "scripts", name), root / "scripts" / name)
    venv = root / ".venv" / "bin"
    venv.mkdir(parents=True)
    for name, text in (("python", FAKE_PYTHON), ("horovodrun", FAKE_HOROVODRUN)):
        (venv / name).write_text(text)
        (venv / name).chmod(0o755)
    return root, tmp_path / "calls"


def start(root, calls, script, **env):
    return subprocess.Popen(
        ["bash", str(root / "scripts" / script)], stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True, cwd=root.parent,
        env={**os.environ, "CALLS": str(calls), "CORPUS": "corpus.txt", "VOCAB": "sp.model",
             "OUT": "out", "DATA": "data", "RUN": "run", "HOSTS": "a:1,b:1", **env})


def run(root, calls, script, **env):
    proc = start(root, calls, script, **env)
    out, err = proc.communicate(timeout=60)
    return proc.returncode, out + err


def trainings(calls):
    return [line for line in calls.read_text().splitlines()
            if "-m albert.run_pretraining" in line]


@pytest.mark.parametrize("gpus", ["1", "2"])
def test_two_phase_stops_after_an_interrupted_phase_1_with_its_status(checkout, gpus):
    root, calls = checkout
    # Interrupted: a lone trainer's 143, or horovodrun's 1 naming its ranks' 143.
    code, out = run(root, calls, "pretrain_two_phase.sh", GPUS=gpus, TRAINER_STATUS="143")
    assert code == 143, out
    started = trainings(calls)
    assert len(started) == 1 and "/phase1/checkpoints" in started[0], started  # no phase 2
    checkpoints = root.parent / "out" / "phase1" / "checkpoints"
    lines = [line for line in out.splitlines() if "interrupted" in line]
    assert lines == [f"[two-phase] phase 1 was interrupted (exit status 143): the checkpoint in "
                     f"{checkpoints} holds phase 1's progress; run this script again, with the "
                     "same settings, to resume"], out
    assert "phase 2" not in out and "done" not in out


@pytest.mark.parametrize("gpus, status", [("1", "0"), ("1", "3"), ("2", "2")])
def test_two_phase_runs_on_only_after_a_finished_phase(checkout, gpus, status):
    root, calls = checkout
    code, out = run(root, calls, "pretrain_two_phase.sh", GPUS=gpus, TRAINER_STATUS=status)
    if status == "0":
        assert code == 0 and len(trainings(calls)) == 2, out
        assert "[two-phase] done" in out
    else:  # another failure: its own status (horovodrun's 1), no word of resuming
        assert code == (1 if gpus == "2" else int(status)), out
        assert len(trainings(calls)) == 1 and "interrupted" not in out


@pytest.mark.parametrize("script", ["pretrain_one_box.sh", "pretrain_multi_host.sh"])
def test_one_and_multi_host_pass_on_horovodruns_interrupted_status(checkout, script):
    root, calls = checkout
    code, out = run(root, calls, script, GPUS="2", TRAINER_STATUS="143")
    assert code == 143, out
    label = "[one-box]" if script == "pretrain_one_box.sh" else "[multi-host]"
    assert (f"{label} the run was interrupted (exit status 143): the checkpoint in "
            f"{root.parent / 'run' / 'checkpoints'} holds the run's progress") in out, out
    assert "Exit code: 143" in out  # horovodrun's own lines still shown
    code, out = run(root, calls, script, GPUS="2", TRAINER_STATUS="2")
    assert code == 1 and "interrupted" not in out
    code, out = run(root, calls, script, GPUS="2")
    assert code == 0 and "interrupted" not in out


def test_a_stop_sent_to_the_script_reaches_the_trainer(checkout):
    """SIGTERM to the script (a container's PID 1): the script used to exec horovodrun, which
    got it; now the script passes it on, waits for the trainer, and says so."""
    root, calls = checkout
    proc = start(root, calls, "pretrain_one_box.sh", GPUS="2", WAIT_FOR_TERM="1")
    deadline = time.time() + 30
    while not (calls.exists() and "started" in calls.read_text()):
        assert time.time() < deadline and proc.poll() is None, proc.communicate()
        time.sleep(0.05)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 143, out + err
    assert "horovodrun got TERM" in calls.read_text()
    assert "[one-box] the run was interrupted (exit status 143)" in err
