"""One run, one spec (albert.train.run_spec), as a user meets it through run_classifier:
experiments in two output directories stay apart, a resume under other settings is refused
naming each, labels in another order never relabel a trained classifier."""

import json
import os
import sys
from typing import NamedTuple

import pytest
from helpers import run_in_process

from albert.demo.classification_sample import write_task
from albert.errors import CheckpointError
from albert.train.run_spec import (
    TOOLKIT,
    check_resume,
    differences,
    file_sha256,
    toolkit_version,
)


class Ran(NamedTuple):
    returncode: int
    stdout: str
    stderr: str


def run_classifier(argv, check=True):
    """`python -m albert.run_classifier argv` as its main(argv) in this process
    (helpers.run_in_process): what these tests read is the run's files, its record and its
    lines, not the process; a refusal is its one "error: " line and status 2 either way."""
    ran = Ran(*run_in_process("run_classifier", argv))
    if check:
        assert ran.returncode == 0, ran.stdout[-3000:] + ran.stderr[-3000:]
    return ran


def refused(proc, *parts):
    assert proc.returncode == 2, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1, proc.stderr[-2000:]
    for part in parts:
        assert part in errors[0], errors[0]
    return errors[0]


@pytest.fixture(scope="module")
def topic(tmp_path_factory):
    out = tmp_path_factory.mktemp("spec_topic")
    write_task(str(out), "topic", seed=0)
    return out


def argv(topic, vocab, output_dir, lr="5e-4", steps="5", *extra):
    return ["--train_file", str(topic / "train.tsv"), "--model_size", "tiny",
            "--config_override", "num_hidden_layers=1", "--spm_model", vocab,
            "--max_seq_length", "32", "--per_gpu_batch_size", "8", "--learning_rate", lr,
            "--total_steps", steps, "--warmup_proportion", "0.5", "--log_frequency", "5",
            "--output_dir", str(output_dir), "--no_progress", "--xla", "off", *extra]


@pytest.mark.e2e
def test_two_experiments_stay_apart_and_a_changed_run_is_refused(topic, sample_vocab, tmp_path):
    a, b = tmp_path / "expA", tmp_path / "expB"
    commands = {a: argv(topic, sample_vocab, a)}
    run_classifier(commands[a])
    # Finding 1: B has its own checkpoints under its --output_dir; it does not resume A.
    commands[b] = argv(topic, sample_vocab, b, "1e-4", "10")
    second = run_classifier(commands[b])
    assert "resuming" not in second.stderr and "train step 10 " in second.stdout
    assert "train step 5 " in second.stdout
    for run, lr, steps in ((a, 5e-4, 5), (b, 1e-4, 10)):
        record = json.loads((run / "checkpoints" / "run.json").read_text())
        assert record["spec"]["learning_rate"] == lr and record["step"] == steps
        assert record["spec"]["labels"] == sorted(record["spec"]["labels"])
        assert record["spec"]["vocabulary_sha256"] and record["versions"]["tensorflow"]
        assert record["command"] == [os.path.basename(sys.executable), "-m",
                                     "albert.run_classifier", *commands[run]]
        assert (run / "logs" / "metrics.jsonl").exists() and list((run / "cache").iterdir())
    # Finding 2: A's command with another learning rate and more steps: refused, naming it.
    refused(run_classifier(argv(topic, sample_vocab, a, "5e-3", "10"), check=False),
            f"--checkpoint_dir {a / 'checkpoints'} holds another run (step 5)",
            "learning_rate: recorded 0.0005, now 0.005", "--overwrite_output_dir")
    # More steps alone resume (the warmup, half the steps, grows with them: recorded as the
    # proportion given), and say what that does to the schedule.
    longer = run_classifier(argv(topic, sample_vocab, a, "5e-4", "8"))
    assert "resuming from" in longer.stderr and "--total_steps 5 -> 8" in longer.stderr
    assert "train step 5 " not in longer.stdout
    # Finding 3 on resume: the same labels in another order are another run.
    labels = json.loads((a / "checkpoints" / "run.json").read_text())["spec"]["labels"]
    reordered = ",".join(reversed(labels))
    refused(run_classifier(argv(topic, sample_vocab, a, "5e-4", "9", "--labels", reordered),
                           check=False),
            f"labels: recorded {labels!r}, now {list(reversed(labels))!r}")
    # Told to discard: starts over.
    fresh = run_classifier(argv(topic, sample_vocab, a, "5e-3", "5", "--overwrite_output_dir"))
    assert "discarding the run" in fresh.stderr and "resuming" not in fresh.stderr


@pytest.mark.e2e
def test_eval_only_refuses_labels_in_another_order(topic, sample_vocab, tmp_path):
    run = tmp_path / "trained"
    run_classifier(argv(topic, sample_vocab, run))
    labels = json.loads((run / "checkpoints" / "run.json").read_text())["spec"]["labels"]
    reordered = ",".join(reversed(labels))
    base = ["--eval_file", str(topic / "dev.tsv"), "--spm_model", sample_vocab,
            "--max_seq_length", "32", "--output_dir", str(tmp_path / "eval"), "--no_progress",
            "--xla", "off"]
    for source in (["--load_from", "checkpoint", "--checkpoint_path", str(run / "checkpoints")],
                   ["--load_from", "pretrained", "--checkpoint_path",
                    str(run / "checkpoints" / "final")]):
        refused(run_classifier(base + source + ["--labels", reordered], check=False),
                f"--labels {reordered}: the model in", f"was trained with the labels "
                f"{','.join(labels)} (in id order)")
        # The same labels in their order, or none, score as trained.
        same = run_classifier(base + source + ["--labels", ",".join(labels)])
        plain = run_classifier(base + source)
        scores = [json.loads((tmp_path / "eval" / "eval_results.json").read_text())
                  for _ in (0,)]
        assert scores[0]["labels"] == labels
        assert same.stdout.split("eval on")[1].split(";")[0] == \
            plain.stdout.split("eval on")[1].split(";")[0]


def test_differences_name_each_entry_and_ignore_total_steps():
    before = {"learning_rate": 1e-3, "total_steps": 10, "features": {"max_seq_length": 64},
              "labels": ["a", "b"]}
    assert differences(before, {**before, "total_steps": 20}) == []
    assert differences(before, {**before, "features": {"max_seq_length": 128},
                                "labels": ["b", "a"], "seed": 3}) == [
        "features.max_seq_length: recorded 64, now 128",
        "labels: recorded ['a', 'b'], now ['b', 'a']",
        "seed: recorded None, now 3"]


@pytest.mark.e2e
def test_keep_best_keeps_the_best_evaluation_and_says_which(topic, sample_vocab, tmp_path):
    out = tmp_path / "run"
    base = argv(topic, sample_vocab, out, "2e-3", "8", "--eval_file", str(topic / "dev.tsv"),
                "--eval_frequency", "2")
    proc = run_classifier(base + ["--keep_best", "loss", "--export_dir",
                                  str(tmp_path / "serving" / "1")])
    assert "exporting the best model (--keep_best loss)" in proc.stderr
    assert (tmp_path / "serving" / "1" / "saved_model.pb").exists()
    evals = [json.loads(line) for line in open(out / "logs" / "metrics.jsonl")]
    evals = [r for r in evals if r["split"] == "eval"]
    assert [r["step"] for r in evals] == [2, 4, 6, 8]
    best = min(evals, key=lambda r: r["loss"])
    record = json.loads((out / "checkpoints" / "run.json").read_text())
    assert record["best"] == {"metric": "loss", "value": pytest.approx(best["loss"]),
                              "step": best["step"],
                              "eval_file": os.path.realpath(topic / "dev.tsv"),
                              "eval_sha256": file_sha256(str(topic / "dev.tsv"))}
    assert f"best loss so far: {best['loss']:.4f} at step {best['step']}" in proc.stderr
    kept = out / "checkpoints" / "best"
    # Issue 34 item 11: the summary and eval_results.json say which model was exported (the
    # best kept, its step and score), and that their other scores are the final model's.
    line = [x for x in proc.stdout.splitlines() if x.startswith("summary: ")][-1]
    assert f"best loss {best['loss']:.4f} at step {best['step']} in {kept}" in line, line
    assert "SavedModel (the best model) in " in line and "eval of the final model " in line
    results = json.loads((out / "eval_results.json").read_text())
    assert results["keep_best"] == {**record["best"], "model": "best", "path": str(kept),
                                    "exported": results["keep_best"]["exported"]}
    assert results["keep_best"]["exported"].endswith(os.path.join("serving", "1"))
    assert json.loads((kept / "albert_task.json").read_text())["labels"] == \
        record["spec"]["labels"]
    # The kept model scores what it scored when it was kept.
    again = run_classifier(["--eval_file", str(topic / "dev.tsv"), "--load_from", "pretrained",
                            "--checkpoint_path", str(kept), "--max_seq_length", "32",
                            "--output_dir", str(tmp_path / "eval"), "--no_progress", "--xla",
                            "off"])
    assert "eval on" in again.stdout
    rescored = json.loads((tmp_path / "eval" / "eval_results.json").read_text())
    assert rescored["loss"] == pytest.approx(best["loss"], rel=1e-4)
    # A metric no evaluation reports, or nothing to evaluate: refused before any work.
    refused(run_classifier(base + ["--keep_best", "bleu", "--overwrite_output_dir"],
                           check=False), "--keep_best bleu is no metric this evaluation reports")
    refused(run_classifier(argv(topic, sample_vocab, tmp_path / "x") + ["--keep_best", "f1"],
                           check=False), "--keep_best f1 needs --eval_file")


# -- the typed spec, resolved in-process ----------------------------------------------------------

def test_each_runner_resolves_its_flags_into_one_frozen_typed_spec(sample_vocab, tmp_path):
    import dataclasses

    from albert import run_classifier, run_pretraining, run_squad
    from albert.data.classification import Columns
    from albert.tasks.classifier_options import ClassifierOptions
    from albert.tasks.pretraining_options import PretrainingOptions
    from albert.tasks.squad_options import SquadOptions
    from albert.train.run_spec import Data, RunSpec

    for name in ("train.json", "train.tsv", "dev.tsv"):
        (tmp_path / name).write_text("x")
    squad = run_squad.resolve(run_squad.parse_args([
        "--train_file", str(tmp_path / "train.json"), "--spm_model", sample_vocab,
        "--output_dir", str(tmp_path / "squad"), "--learning_rate", "5e-5", "--doc_stride", "64",
        "--skip_xla", "--padding", "max", "--n_best_size", "7"]))
    assert isinstance(squad, RunSpec) and squad.task == "squad" and squad.trains
    assert squad.options == SquadOptions(doc_stride=64, padding="max", n_best_size=7)
    assert squad.options.identity()["features"] == {
        "max_seq_length": 384, "doc_stride": 64, "max_query_length": 64, "padding": "max",
        "squad_version": None}  # the training file settles it (SquadTask.setup)
    assert squad.data == Data(train=str(tmp_path / "train.json"))
    o = squad.optimization
    assert (o.optimizer, o.learning_rate, o.warmup_steps, o.warmup_proportion) == \
        ("adamw", 5e-5, None, 0.1)
    assert o.warmup(1000) == 100 and o.bias_correction
    assert squad.execution.xla == "off" and squad.execution.seed == 42
    assert squad.outputs.checkpoint_dir == str(tmp_path / "squad" / "checkpoints")
    assert squad.outputs.cache_dir == str(tmp_path / "squad" / "cache")
    assert squad.vocabulary == sample_vocab
    assert squad.batching.plan(2).global_batch == 48  # the default micro-batch 24 x 2 ranks
    with pytest.raises(dataclasses.FrozenInstanceError):
        squad.task = "classification"
    with pytest.raises(dataclasses.FrozenInstanceError):
        squad.optimization.learning_rate = 1.0
    with pytest.raises(dataclasses.FrozenInstanceError):
        squad.options.doc_stride = 32
    assert run_squad.resolve(run_squad.parse_args([
        "--train_file", str(tmp_path / "train.json"), "--spm_model", sample_vocab,
        "--squad_version", "squadv1"])).options.squad_version == "v1.1"  # the files' spelling

    glue = run_classifier.resolve(run_classifier.parse_args([
        "--train_file", str(tmp_path / "train.tsv"), "--eval_file", str(tmp_path / "dev.tsv"),
        "--spm_model", sample_vocab, "--output_dir", str(tmp_path / "glue"), "--labels",
        "yes,no", "--text_a", "premise", "--text_b", "hypothesis", "--warmup_steps", "3"]))
    assert glue.task == "classification" and glue.options == ClassifierOptions(
        columns=Columns("premise", "hypothesis", "label"),
        predict_columns=Columns("premise", "hypothesis", "label"), labels=("yes", "no"),
        labels_flag="--labels yes,no")
    assert glue.options.identity() == {
        "features": {"max_seq_length": 128, "columns": ["premise", "hypothesis", "label", True]},
        "labels": ["yes", "no"]}
    assert glue.optimization.warmup_steps == 3 and glue.optimization.warmup_proportion is None

    pre = run_pretraining.resolve(run_pretraining.parse_args([
        "--train_dir", "shards", "--total_steps", "10", "--max_seq_length", "128",
        "--per_gpu_batch_size", "auto", "--global_batch_size", "64", "--precision", "bf16"]))
    assert pre.task == "pretraining" and pre.total_steps == 10
    assert pre.data == Data(train="shards")
    assert pre.options == PretrainingOptions(max_seq_length=128)
    assert pre.options.identity()["features"] == {
        "max_seq_length": 128, "max_predictions_per_seq": 20, "shuffle_buffer": 10_000}
    assert pre.batching.auto and pre.batching.chosen(8, 8).plan(1).global_batch == 64
    assert pre.execution.precision == "bf16" and pre.optimization.optimizer == "lamb"


def test_the_recorded_identity_holds_everything_that_decides_the_trajectory(sample_vocab):
    import dataclasses

    from albert.model.config import AlbertConfig
    from albert.tasks.squad_options import SquadOptions
    from albert.train.run_spec import (
        Execution,
        ModelSource,
        Optimization,
        RunSpec,
        file_sha256,
        identity,
    )

    spec = RunSpec(task="squad", model=ModelSource(load_from="pretrained",
                                                   checkpoint_path="/models/base"),
                   vocabulary=sample_vocab,
                   options=SquadOptions(max_seq_length=128, doc_stride=64, squad_version="v2.0"),
                   optimization=Optimization(learning_rate=3e-5, warmup_steps=None,
                                             warmup_proportion=0.1),
                   execution=Execution(precision="bf16", seed=7))
    config = AlbertConfig.from_preset("tiny", vocab_size=2000)
    record = identity(spec, config=config, global_batch=48, total_steps=100, data=["t (1 bytes)"])
    assert record["started_from"] == {"load_from": "pretrained", "checkpoint_path":
                                      "/models/base", "load_optimizer_state": False}
    assert record["vocabulary_sha256"] == file_sha256(sample_vocab)
    assert (record["learning_rate"], record["warmup_steps"], record["warmup_proportion"],
            record["seed"], record["precision"], record["global_batch"]) == \
        (3e-5, None, 0.1, 7, "bf16", 48)
    assert record["model_config"] == config.to_dict()
    assert record["features"] == {"max_seq_length": 128, "doc_stride": 64,
                                  "max_query_length": 64, "padding": "batch",
                                  "squad_version": "v2.0"}
    assert record["labels"] is None
    # What decides neither the trajectory nor the answers' windows may change on a resume.
    evaluated = spec.replace(options=dataclasses.replace(spec.options, n_best_size=5,
                                                         eval_batch_size=8))
    assert identity(evaluated, config=config, global_batch=48, total_steps=100,
                    data=["t (1 bytes)"]) == record
    changed = identity(spec.replace(optimization=Optimization(learning_rate=1e-4)),
                       config=config, global_batch=48, total_steps=200, data=["t (1 bytes)"])
    assert differences(record, changed) == [
        "learning_rate: recorded 3e-05, now 0.0001", "warmup_proportion: recorded 0.1, now None",
        "warmup_steps: recorded None, now 0"]


def test_a_resume_with_another_global_batch_is_refused():
    """Issue 34 item 14: the global batch is the run's (the update's size and the schedule's
    meaning); only its split may change. Fails if global_batch joins MAY_CHANGE."""
    recorded = {"task": "classification", "global_batch": 32, "learning_rate": 1e-3,
                "total_steps": 10}
    with pytest.raises(CheckpointError, match=r"holds another run \(step 4\); this command "
                                              r"differs in global_batch: recorded 32, now 64"):
        check_resume({"spec": recorded}, {**recorded, "global_batch": 64}, "ckpt", 4)
    assert check_resume({"spec": recorded}, recorded, "ckpt", 4) == recorded


def test_the_record_names_the_toolkit_version_and_a_newer_ones_settings_are_named():
    """Issue 34 item 12: run.json records albert-tf's version (the distribution, not the import
    name), and a run recorded by a newer version with settings this one lacks is refused saying
    which version resumes it, not "resume it with the recorded settings" (no flag gives them)."""
    import importlib.metadata as md

    from albert.tasks.runner import environment

    assert environment()["versions"][TOOLKIT] == md.version("albert-tf") == toolkit_version()
    spec = {"task": "squad", "features": {"max_seq_length": 64}, "learning_rate": 1e-3}
    newer = {**spec, "features": {"max_seq_length": 64, "stride_mode": "sentence"},
             "label_smoothing": 0.1}
    with pytest.raises(CheckpointError) as e:
        check_resume({"spec": newer, "versions": {TOOLKIT: "99.0.0"}}, spec, "ckpt", 3)
    message = str(e.value)
    assert (f"recorded by {TOOLKIT} 99.0.0, with settings this version ({toolkit_version()}) "
            "does not know: features.stride_mode, label_smoothing. Resume it with "
            f"{TOOLKIT} 99.0.0 or later") in message
    assert "recorded settings" not in message
    # Recorded by a newer version without new settings: it resumes.
    assert check_resume({"spec": spec, "versions": {TOOLKIT: "99.0.0"}}, spec, "ckpt", 3) == spec


def test_a_squad_run_recorded_before_padding_resumes_as_padded_to_max():
    before = {"features": {"max_seq_length": 384}}
    assert differences(before, {"features": {"max_seq_length": 384, "padding": "max"}}) == []
    assert differences(before, {"features": {"max_seq_length": 384, "padding": "batch"}}) == [
        "features.padding: recorded 'max', now 'batch'"]


def test_no_module_below_the_command_line_takes_the_parsed_flags():
    """Issue 23: the run spec is what the library takes; the flags stop at the runners."""
    import ast
    import pathlib

    import albert

    root = pathlib.Path(albert.__file__).parent
    library = sorted(path for package in ("model", "io", "data", "train", "tasks", "eval")
                     for path in (root / package).glob("*.py"))
    assert len(library) > 30
    for path in library:
        name = path.relative_to(root)
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Import | ast.ImportFrom):
                names = [a.name for a in node.names] + [getattr(node, "module", None) or ""]
                assert "argparse" not in names, f"{name} imports argparse"
            if isinstance(node, ast.FunctionDef):
                params = [a.arg for a in node.args.args + node.args.kwonlyargs]
                assert "args" not in params, f"{name}: {node.name} takes args"


def test_a_run_recorded_by_the_dict_layout_resumes_under_the_typed_options(sample_vocab):
    """Issue 36 item 1: run.json's spec is written as the dict layout wrote it (its "features",
    in the same order, and "labels" beside them), so a run directory recorded before the typed
    options resumes, and a changed identity field is still named."""
    from albert.data.classification import Columns
    from albert.model.config import AlbertConfig
    from albert.tasks.classifier_options import ClassifierOptions
    from albert.tasks.pretraining_options import PretrainingOptions
    from albert.tasks.squad_options import SquadOptions
    from albert.train.run_spec import Data, RunSpec, identity

    # As the dict layout recorded them (spec.features, spec.labels of run.json), for runs
    # resolved from each runner's defaults.
    recorded = {
        "squad": ({"max_seq_length": 384, "doc_stride": 128, "max_query_length": 64,
                   "padding": "batch", "squad_version": "v2.0"}, None),
        "classification": ({"max_seq_length": 128,
                            "columns": ["sentence", None, "label", True]}, ["neg", "pos"]),
        "pretraining": ({"max_seq_length": 512, "max_predictions_per_seq": 20,
                         "shuffle_buffer": 10000}, None),
    }
    typed = {
        "squad": SquadOptions(squad_version="v2.0", n_best_size=5),
        "classification": ClassifierOptions(columns=Columns("sentence", None, "label"),
                                            labels=("neg", "pos"), kind="classification",
                                            padding="max", metric="mcc"),
        "pretraining": PretrainingOptions(filesystem_prefix="/fsx", squad_frequency=100),
    }
    config = AlbertConfig.from_preset("tiny", vocab_size=2000)
    for task, (features, labels) in recorded.items():
        now = identity(RunSpec(task=task, options=typed[task], vocabulary=sample_vocab,
                               data=Data(train="t")),
                       config=config, global_batch=32, total_steps=10, data=["t (1 bytes)"])
        assert json.dumps(now["features"]) == json.dumps(features), task  # run.json's text
        before = {**now, "features": features, "labels": labels}
        assert check_resume({"spec": before}, now, "ckpt", 3) == now
        changed = {**features, "max_seq_length": 64}
        with pytest.raises(CheckpointError, match=r"differs in features\.max_seq_length: "
                                                  r"recorded 64, now \d+"):
            check_resume({"spec": {**before, "features": changed}}, now, "ckpt", 3)
    # A SQuAD run recorded before --padding existed resumes as padded to max_seq_length.
    before_padding = {k: v for k, v in recorded["squad"][0].items() if k != "padding"}
    padded = identity(RunSpec(task="squad", options=SquadOptions(squad_version="v2.0",
                                                                 padding="max"),
                              vocabulary=sample_vocab, data=Data(train="t")),
                      config=config, global_batch=32, total_steps=10, data=["t (1 bytes)"])
    assert check_resume({"spec": {**padded, "features": before_padding}}, padded, "ckpt", 3)


def test_each_task_option_says_whether_it_is_the_runs():
    """What run.json records and a resume compares is declared on the options' fields."""
    import dataclasses

    from albert.tasks.classifier_options import ClassifierOptions
    from albert.tasks.pretraining_options import PretrainingOptions
    from albert.tasks.squad_options import SquadOptions
    from albert.train.run_spec import IDENTITY

    def identity_fields(cls):
        return {f.name: f.metadata[IDENTITY] for f in dataclasses.fields(cls)
                if f.metadata.get(IDENTITY)}

    assert identity_fields(SquadOptions) == dict.fromkeys(
        ("max_seq_length", "doc_stride", "max_query_length", "padding", "squad_version"),
        "features")
    assert identity_fields(ClassifierOptions) == {"max_seq_length": "features",
                                                  "columns": "features", "labels": "labels"}
    assert identity_fields(PretrainingOptions) == dict.fromkeys(
        ("max_seq_length", "max_predictions_per_seq", "shuffle_buffer"), "features")
    with pytest.raises(dataclasses.FrozenInstanceError):
        SquadOptions().padding = "max"
