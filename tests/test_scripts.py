"""The shipped launch scripts, run as a user runs them: plan mode with a fake GPU count prints the
README recipe's batch plan; the two-phase script runs both phases end to end on tiny data."""

import json
import os
import subprocess

from conftest import REPO_ROOT


def run_script(name, env, timeout=600):
    proc = subprocess.run(["bash", os.path.join(REPO_ROOT, "scripts", name)], capture_output=True,
                          text=True, timeout=timeout,
                          env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2", **env})
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc.stdout + proc.stderr


def test_one_box_script_plans_32_x_16_x_8():
    out = run_script("pretrain_one_box.sh", {"PLAN_ONLY": "1", "GPUS": "8", "DATA": "/fsx/data",
                                             "VOCAB": "/fsx/vocab/spiece.model"})
    assert "would run: .venv/bin/horovodrun -np 8 -H localhost:8" in out
    assert ("batch plan: 32 x 16 x 8 = 4096 (per-GPU micro-batch x accumulation steps x ranks = "
            "sequences per update); 2,097,152 tokens per update at sequence length 512; 125,000 "
            "updates = 512,000,000 sequences in all") in out
    # The memory plan per GPU, planned from here although the vocabulary is on the cluster.
    assert ("--spm_model /fsx/vocab/spiece.model is not on this machine: the memory plan assumes "
            "a vocabulary of 30000 pieces") in out
    memory = [line for line in out.splitlines() if line.startswith("memory plan: ")]
    assert len(memory) == 1, out
    assert "(micro-batch 32 at sequence length 512, bf16, recompute none)" in memory[0]


def test_multi_host_script_plans_32_x_8_x_16():
    out = run_script("pretrain_multi_host.sh", {"PLAN_ONLY": "1", "HOSTS": "ip-a:8,ip-b:8",
                                                "DATA": "/fsx/data", "VOCAB": "/fsx/v.model"})
    assert "-np 16 -H ip-a:8,ip-b:8" in out
    assert "batch plan: 32 x 8 x 16 = 4096" in out


def test_two_phase_script_runs_both_phases_and_hands_over_the_weights(sample_corpus, sample_vocab,
                                                                       tmp_path):
    env = {"CORPUS": str(sample_corpus), "VOCAB": sample_vocab, "OUT": str(tmp_path / "run"),
           "GPUS": "1", "MODEL_SIZE": "tiny", "PHASE1_SEQ": "32", "PHASE2_SEQ": "64",
           "PHASE1_PREDS": "5", "PHASE2_PREDS": "10", "PHASE1_BATCH": "8", "PHASE2_BATCH": "4",
           "PHASE1_GLOBAL": "8", "PHASE2_GLOBAL": "8", "PHASE1_STEPS": "4", "PHASE2_STEPS": "2",
           "CARRY_OPTIMIZER": "1", "DATA_FLAGS": "--num_shards 2 --processes 1 --no_progress"}
    out = run_script("pretrain_two_phase.sh", {**env}, timeout=900)
    run = tmp_path / "run"
    assert json.loads((run / "data-32" / "summary.json").read_text())["instances"] > 0
    assert json.loads((run / "data-64" / "summary.json").read_text())["instances"] > 0
    phase1 = json.loads((run / "phase1" / "checkpoints" / "run.json").read_text())
    phase2 = json.loads((run / "phase2" / "checkpoints" / "run.json").read_text())
    assert phase1["finished"] and phase1["step"] == 4
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
    again = run_script("pretrain_two_phase.sh", env)
    assert again.count("this run already finished") == 2
