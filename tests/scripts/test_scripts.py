"""The shipped launch scripts, run as a user runs them: plan mode with a fake GPU count prints the
batch plan of docs/pretraining.md's recipe; the two-phase script runs both phases end to end on
tiny data."""

import dis
import importlib
import inspect
import io
import itertools
import json
import os
import re
import shlex
import shutil
import subprocess
import textwrap
import tokenize
import types

import pytest
from helpers import REPO_ROOT

VENV_BIN = os.path.join(REPO_ROOT, ".venv", "bin")


def run_script(name, env, timeout=600, cwd=None, args=(), check=True):
    proc = subprocess.run(["bash", os.path.join(REPO_ROOT, "scripts", name), *args],
                          capture_output=True, text=True, timeout=timeout, cwd=cwd,
                          env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2", **env})
    if check:
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
        return proc.stdout + proc.stderr
    return proc


def would_run(out, module):
    """The argv of the script's "would run:" line for `module`, as a shell reads it."""
    lines = [line for line in out.splitlines()
             if line.startswith("would run: ") and f" -m {module} " in line]
    assert len(lines) >= 1, out
    return [shlex.split(line[len("would run: "):]) for line in lines]


def value(argv, flag):
    return argv[argv.index(flag) + 1]


@pytest.mark.e2e
def test_launch_scripts_quiet_tensorflows_start_up_lines_under_horovodrun():
    """horovodrun's build checks import TensorFlow in subprocesses that print its INFO start-up
    lines, one set per check: the launch scripts' shared helpers drop INFO (warnings and errors
    stay), and a level the caller set is kept."""
    env = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}
    lib = os.path.join(REPO_ROOT, "scripts", "lib.sh")
    show = f'source "{lib}"; echo "$TF_CPP_MIN_LOG_LEVEL"'
    assert subprocess.run(["bash", "-c", show], env=env, capture_output=True, text=True,
                          check=True).stdout.strip() == "1"
    assert subprocess.run(["bash", "-c", show], env={**env, "TF_CPP_MIN_LOG_LEVEL": "0"},
                          capture_output=True, text=True, check=True).stdout.strip() == "0"
    for name in ("pretrain_one_box.sh", "pretrain_multi_host.sh", "pretrain_two_phase.sh"):
        with open(os.path.join(REPO_ROOT, "scripts", name), encoding="utf-8") as f:
            assert 'source "$ROOT/scripts/lib.sh"' in f.read(), name


@pytest.mark.e2e
def test_one_box_script_plans_32_x_16_x_8():
    out = run_script("pretrain_one_box.sh", {"PLAN_ONLY": "1", "GPUS": "8", "DATA": "/fsx/data",
                                             "VOCAB": "/fsx/vocab/spiece.model"})
    [argv] = would_run(out, "albert.run_pretraining")
    assert argv[:5] == [os.path.join(VENV_BIN, "horovodrun"), "-np", "8", "-H", "localhost:8"]
    assert ("batch plan: 32 x 16 x 8 = 4096 (per-GPU micro-batch x accumulation steps x ranks = "
            "sequences per update); 2,097,152 tokens per update at sequence length 512; 125,000 "
            "updates = 512,000,000 sequences in all") in out
    # The memory plan per GPU, planned from here although the vocabulary is on the cluster.
    assert ("--spm_model /fsx/vocab/spiece.model is not on this machine: the memory plan assumes "
            "a vocabulary of 30000 pieces") in out
    memory = [line for line in out.splitlines() if line.startswith("memory plan: ")]
    assert len(memory) == 1, out
    assert "(micro-batch 32 at sequence length 512, bf16, recompute none)" in memory[0]


@pytest.mark.e2e
def test_multi_host_script_plans_32_x_8_x_16():
    out = run_script("pretrain_multi_host.sh", {"PLAN_ONLY": "1", "HOSTS": "ip-a:8,ip-b:8",
                                                "DATA": "/fsx/data", "VOCAB": "/fsx/v.model"})
    assert "-np 16 -H ip-a:8,ip-b:8" in out
    assert "batch plan: 32 x 8 x 16 = 4096" in out


@pytest.mark.e2e
def test_two_phase_script_runs_both_phases_and_hands_over_the_weights(sample_corpus, sample_vocab,
                                                                       tmp_path):
    # Issue 24 item 13 as well: CORPUS, VOCAB and OUT relative to the caller's directory, with
    # spaces (they were resolved against the checkout, and CORPUS was split on spaces).
    caller = tmp_path / "the caller"
    (caller / "my corpus").mkdir(parents=True)
    (caller / "my vocab").mkdir()
    shutil.copy(sample_corpus, caller / "my corpus" / "corpus.txt")
    shutil.copy(sample_vocab, caller / "my vocab" / "spiece.model")
    tmp_path = caller / "run out"
    env = {"CORPUS": "my corpus/corpus.txt", "VOCAB": "my vocab/spiece.model", "OUT": "run out",
           "GPUS": "1", "MODEL_SIZE": "tiny", "PHASE1_SEQ": "32", "PHASE2_SEQ": "64",
           "PHASE1_PREDS": "5", "PHASE2_PREDS": "10", "PHASE1_BATCH": "8", "PHASE2_BATCH": "4",
           "PHASE1_GLOBAL": "8", "PHASE2_GLOBAL": "8", "PHASE1_STEPS": "4", "PHASE2_STEPS": "2",
           "CARRY_OPTIMIZER": "1", "DATA_FLAGS": "--num_shards 2 --processes 1 --no_progress"}
    # Flags after the script's name go to both phases: --xla off, as no compiled step is what
    # this test reads (auto would time a probe and compile each phase's step).
    xla_off = ("--xla", "off")
    out = run_script("pretrain_two_phase.sh", {**env}, timeout=900, cwd=caller, args=xla_off)
    run = caller / "run out"
    assert json.loads((run / "data-32" / "summary.json").read_text())["instances"] > 0
    assert json.loads((run / "data-64" / "summary.json").read_text())["instances"] > 0
    phase1 = json.loads((run / "phase1" / "checkpoints" / "run.json").read_text())
    phase2 = json.loads((run / "phase2" / "checkpoints" / "run.json").read_text())
    assert phase1["finished"] and phase1["step"] == 4
    assert phase1["xla"]["reason"] == phase2["xla"]["reason"] == "--xla off"
    assert phase2["finished"] and phase2["step"] == 2
    assert phase2["started_from"]["load_from"] == "checkpoint"
    assert phase2["started_from"]["load_optimizer_state"] is True
    assert phase2["batch_plan"] == {"ranks": 1, "micro_batch": 4, "accumulation": 2,
                                    "global_batch": 8}
    assert "phase 2's Hugging Face export is in" in out
    # Phase 2 started from phase 1's final checkpoint, weights and LAMB moments.
    assert (f"initialised from {run / 'phase1' / 'checkpoints'} (weights and optimizer moments)"
            in out)
    # Re-running resumes: both phases are already finished and say so.
    again = run_script("pretrain_two_phase.sh", env, cwd=caller, args=xla_off)
    assert again.count("this run already finished") == 2


@pytest.mark.e2e
def test_scripts_resolve_relative_paths_against_the_callers_directory(sample_vocab, tmp_path):
    """Relative DATA/VOCAB/RUN and CORPUS/VOCAB/OUT name the caller's files (the scripts `cd`ed
    to the checkout), quoted whole: a space neither splits CORPUS nor breaks the printed
    command, which a shell reads back as the same arguments."""
    caller = tmp_path / "the caller"
    (caller / "my vocab").mkdir(parents=True)
    shutil.copy(sample_vocab, caller / "my vocab" / "spiece.model")
    vocab = str(caller / "my vocab" / "spiece.model")

    out = run_script("pretrain_one_box.sh", {"PLAN_ONLY": "1", "GPUS": "2", "DATA": "my data",
                                             "VOCAB": "my vocab/spiece.model", "RUN": "my run"},
                     cwd=caller)
    [argv] = would_run(out, "albert.run_pretraining")
    assert value(argv, "--filesystem_prefix") == str(caller / "my data")
    assert value(argv, "--spm_model") == vocab
    assert value(argv, "--checkpoint_dir") == str(caller / "my run" / "checkpoints")
    # The plan itself read the caller's vocabulary (no "not on this machine" fallback).
    assert "is not on this machine" not in out and "memory plan: " in out

    out = run_script("pretrain_two_phase.sh", {
        "PLAN_ONLY": "1", "GPUS": "1", "CORPUS": "my corpus/*.txt", "VOCAB":
        "my vocab/spiece.model", "OUT": "my out", "DATA_FLAGS": "--processes 1 --no_progress"},
        cwd=caller)
    data = would_run(out, "albert.create_pretraining_data")
    assert [value(a, "--input") for a in data] == ["my corpus/*.txt"] * 2
    assert [value(a, "--output_dir") for a in data] == [str(caller / "my out" / "data-128"),
                                                        str(caller / "my out" / "data-512")]
    assert all(a[-3:] == ["--processes", "1", "--no_progress"] for a in data)
    phases = would_run(out, "albert.run_pretraining")
    assert [value(a, "--spm_model") for a in phases] == [vocab, vocab]
    assert value(phases[1], "--checkpoint_path") == str(caller / "my out" / "phase1" /
                                                        "checkpoints")
    assert out.count("memory plan: ") == 2 and "is not on this machine" not in out

    # A log dir that exists in the checkout but not beside the caller is not found.
    proc = run_script("tensorboard.sh", {}, cwd=caller, args=["models"], check=False)
    assert proc.returncode == 2
    assert proc.stderr == f"error: log dir models does not exist (relative to {caller})\n"


# The tiers. A unit-tier test starts no process; the few exceptions are cheap and named here.
TIER_MARKERS = {"slow", "horovod", "e2e"}
TEST_MODULES = {"helpers", "conftest"}  # modules of tests/ a test may import from
PROCESS_WORDS = ("subprocess", "horovodrun")  # in lower-cased code, so HOROVODRUN too
CHEAP_PROCESSES = {
    "test_fast_runs_the_unit_tier_and_every_other_test_is_marked":
        "runs `bash scripts/test.sh --plan`, which prints commands and starts no Python",
}


def _collect(args):
    """pytest's own collection of tests/ under `args`, in this process (the test modules are
    imported once): the selected items and the deselected ones."""

    class Recorder:
        def __init__(self):
            self.selected, self.deselected = [], []

        def pytest_deselected(self, items):
            self.deselected.extend(items)

        def pytest_collection_finish(self, session):
            self.selected.extend(session.items)

    recorder = Recorder()
    # `-n 0`: the test workers would collect in their own processes, out of the recorder's sight.
    code = pytest.main([*args, "-n", "0", "--collect-only", "-qq", "-p", "no:cacheprovider",
                        os.path.join(REPO_ROOT, "tests")], plugins=[recorder])
    assert code == pytest.ExitCode.OK, code
    return recorder.selected, recorder.deselected


def _code_of(item):
    """The code (comments left out) of the test function, its fixtures and the functions in
    tests/ they call by global name, transitively."""
    tests = os.path.join(REPO_ROOT, "tests")
    todo = [item.function] + [d.func for defs in item._fixtureinfo.name2fixturedefs.values()
                              for d in defs]
    seen = []
    while todo:
        func = todo.pop()
        if (not isinstance(func, types.FunctionType) or func in seen
                or not (inspect.getsourcefile(func) or "").startswith(tests)):
            continue
        seen.append(func)
        codes = [func.__code__]
        while codes:
            code = codes.pop()
            codes.extend(c for c in code.co_consts if isinstance(c, types.CodeType))
            module = None
            for i in dis.get_instructions(code):
                if i.opname == "LOAD_GLOBAL":
                    todo.append(func.__globals__.get(i.argval))
                elif i.opname == "IMPORT_NAME":
                    module = i.argval
                elif i.opname == "IMPORT_FROM" and module in TEST_MODULES:
                    # `from helpers import as_a_user_runs` inside the test: that code counts too
                    todo.append(getattr(importlib.import_module(module), i.argval, None))
    tokens = [t for func in seen for t in tokenize.generate_tokens(
        io.StringIO(textwrap.dedent(inspect.getsource(func))).readline)]
    return " ".join(t.string for t in tokens if t.type != tokenize.COMMENT)


def test_the_suites_groups_name_real_files_and_hold_every_user_of_a_trained_model():
    """scripts/test.sh hands tests/conftest.py's groups to its two test processes whole, longest
    first: every file the groups and the order name exists (a renamed file would silently lose
    its place), and every test file that uses a session fixture of tests/trained_<x>.py is in
    the group trained_<x>, so that the model is trained once, not once per process; the groups
    come first in the collected order, longest first, each file's tests together."""
    import conftest

    named = [path for files in conftest.SHARED_FIXTURE_GROUPS.values() for path in files]
    named += [g for g in conftest.LONGEST_FIRST if g not in conftest.SHARED_FIXTURE_GROUPS]
    assert [p for p in named if not os.path.isfile(os.path.join(REPO_ROOT, p))] == []
    assert len(set(conftest.LONGEST_FIRST)) == len(conftest.LONGEST_FIRST)
    for group in conftest.SHARED_FIXTURE_GROUPS:
        assert os.path.isfile(os.path.join(REPO_ROOT, "tests", f"{group}.py")), group
    items = _collect([])[0]
    users = {}
    for item in items:
        for name in item.fixturenames:
            for fixture in item._fixtureinfo.name2fixturedefs.get(name, ()):
                module = fixture.func.__module__
                if module.startswith("trained_"):
                    users.setdefault(module, set()).add(item.nodeid.split("::")[0])
    assert set(users) == set(conftest.SHARED_FIXTURE_GROUPS), users
    for module, files in users.items():
        assert files <= set(conftest.SHARED_FIXTURE_GROUPS[module]), (module, files)
        assert {conftest.group_of(f) for f in files} == {module}
    # Order: the named groups first, longest first; each file's tests stay together and in order.
    files = [i.nodeid.split("::")[0].split("@")[0] for i in items]
    groups = list(dict.fromkeys(conftest.group_of(f) for f in files))
    assert groups[:len(conftest.LONGEST_FIRST)] == list(conftest.LONGEST_FIRST)
    runs = [f for f, _ in itertools.groupby(files)]
    assert len(runs) == len(set(runs)) == len(set(files)) >= 100


# Collects the whole suite in this process (about 10 s).
@pytest.mark.slow
def test_fast_runs_the_unit_tier_and_every_other_test_is_marked():
    """`scripts/test.sh --fast` selects exactly the tests without a slow, horovod or e2e marker,
    none of which launches horovodrun or a command-line tool; the marked tests and the unit tier
    together are the whole suite (which CI runs)."""
    plan = subprocess.run(["bash", os.path.join(REPO_ROOT, "scripts", "test.sh"), "--fast",
                           "--plan"], capture_output=True, text=True, timeout=60, check=True)
    [line] = [line for line in plan.stdout.splitlines() if " -m pytest" in line]
    argv = shlex.split(line[len("would run: "):])
    assert argv[:3] == [".venv/bin/python", "-m", "pytest"] and argv[3] == "-m", argv
    assert set(re.findall(r"\w+", argv[4])) == TIER_MARKERS | {"not", "and"}, argv

    unit, rest = _collect(argv[3:])
    everything = unit + rest
    marked = [i for i in everything if TIER_MARKERS & {m.name for m in i.iter_markers()}]
    assert len(everything) > 500 and len(unit) > 300
    assert len(marked) + len(unit) == len(everything)
    assert {i.nodeid for i in marked} == {i.nodeid for i in rest}

    launching = {}
    for item in unit:
        words = [w for w in PROCESS_WORDS if w in _code_of(item).lower()]
        if words and item.originalname not in CHEAP_PROCESSES:
            launching[item.nodeid] = words
    assert launching == {}, "mark these e2e, horovod or slow:\n" + "\n".join(launching)
