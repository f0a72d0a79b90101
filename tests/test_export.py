"""albert.export as a user runs it (its main, in this process): the SavedModel's signature as
saved_model_cli shows it, and a fresh process that loads it without this package reproducing the
Keras model."""

import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf
from helpers import keras_outputs, run_in_process, serving_inputs, tiny_config

from albert import AlbertConfig, AlbertForPreTraining, AlbertForQuestionAnswering
from albert.data.tokenization import text_rule
from albert.io.pretrained import save_pretrained

SAVED_MODEL_CLI = os.path.join(os.path.dirname(sys.executable), "saved_model_cli")
ENV = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"}

# Runs in a fresh interpreter: TensorFlow only. It fails if anything imported albert.
SERVE = """
import sys
import numpy as np
import tensorflow as tf

loaded = tf.saved_model.load(sys.argv[1])
serve = loaded.signatures["serving_default"]
inputs = np.load(sys.argv[2])
out = {}
for case in ("a", "b"):
    result = serve(**{name: tf.constant(inputs[f"{case}_{name}"])
                      for name in ("input_ids", "attention_mask", "token_type_ids")})
    for name, value in result.items():
        assert value.dtype == tf.float32, (name, value.dtype)
        out[f"{case}_{name}"] = value.numpy()
assert not [m for m in sys.modules if m == "albert" or m.startswith("albert.")]
np.savez(sys.argv[3], **out)
"""


def export(argv, check=True):
    """albert.export's main(argv) in this process: (exit status, stdout, stderr)."""
    code, out, err = run_in_process("export", argv)
    if check:
        assert code == 0, out[-2000:] + err[-3000:]
    return code, out, err


def serve_without_albert(saved_model, inputs, tmp_path):
    np.savez(tmp_path / "inputs.npz", **inputs)
    proc = subprocess.run([sys.executable, "-c", SERVE, str(saved_model),
                           str(tmp_path / "inputs.npz"), str(tmp_path / "outputs.npz")],
                          capture_output=True, text=True, timeout=300, env=ENV, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return dict(np.load(tmp_path / "outputs.npz"))


def trainer_checkpoint(model, directory):
    """What the checkpoint store (CheckpointStore) writes: model=... among other trackables,
    config.json."""
    step = tf.Variable(7, dtype=tf.int64)
    manager = tf.train.CheckpointManager(tf.train.Checkpoint(model=model, step=step),
                                         str(directory), max_to_keep=2)
    manager.save(checkpoint_number=7)
    model.config.to_json_file(directory / "config.json")


@pytest.mark.e2e
def test_qa_export_from_trainer_checkpoint(sample_vocab, tmp_path):
    """The export in this process; saved_model_cli (the tool a user inspects it with) and a
    fresh interpreter without this package (a server's) are processes by nature."""
    tf.keras.utils.set_random_seed(0)
    model = AlbertForQuestionAnswering(tiny_config()).build_for_config()
    trainer_checkpoint(model, tmp_path / "ckpt")
    out = tmp_path / "serving" / "1"
    _, stdout, _ = export(["--checkpoint_path", str(tmp_path / "ckpt"), "--head", "qa",
                           "--output_dir", str(out), "--spm_model", sample_vocab])
    assert "exported squad SavedModel" in stdout  # qa: the old spelling, read
    assert sorted(os.listdir(out / "assets")) == ["config.json", "spiece.model",
                                                  "tokenizer_config.json"]
    # The vocabulary's text rule travels with it: the export tokenizes as the records were made.
    assert text_rule(str(out / "assets" / "spiece.model")) == text_rule(sample_vocab)
    assert AlbertConfig.from_json_file(out / "assets" / "config.json") == model.config

    shown = subprocess.run([SAVED_MODEL_CLI, "show", "--dir", str(out), "--all"],
                           capture_output=True, text=True, timeout=120, env=ENV, check=True).stdout
    signature = shown.split("signature_def['serving_default']:")[1].split("Method name")[0]
    for name in ("input_ids", "attention_mask", "token_type_ids"):
        assert f"inputs['{name}'] tensor_info:\n        dtype: DT_INT32\n        shape: (-1, -1)" \
            in signature, signature
    for name in ("start_logits", "end_logits"):
        assert f"outputs['{name}'] tensor_info:\n        dtype: DT_FLOAT\n        shape: (-1, -1)" \
            in signature, signature

    inputs = serving_inputs()
    served = serve_without_albert(out, inputs, tmp_path)
    expected = keras_outputs(model, inputs, ("start_logits", "end_logits"))
    assert sorted(served) == sorted(expected)
    for key, value in expected.items():
        np.testing.assert_allclose(served[key], value, atol=1e-5, err_msg=key)
    assert served["a_start_logits"].shape == (3, 11)
    assert served["b_start_logits"].shape == (5, 37)


@pytest.mark.e2e
def test_pretraining_export_from_hf_dir(sample_vocab, tmp_path):
    """Served by a fresh interpreter without this package (a server's), a process by nature."""
    tf.keras.utils.set_random_seed(1)
    model = AlbertForPreTraining(tiny_config()).build_for_config()
    save_pretrained(model, tmp_path / "hf", spm_model=sample_vocab)
    out = tmp_path / "serving" / "3"
    export(["--checkpoint_path", str(tmp_path / "hf"), "--head", "pretraining",
            "--output_dir", str(out)])  # the vocabulary is found beside the weights
    with open(sample_vocab, "rb") as a, open(out / "assets" / "spiece.model", "rb") as b:
        assert a.read() == b.read()
    inputs = serving_inputs(seed=1)
    served = serve_without_albert(out, inputs, tmp_path)
    expected = keras_outputs(model, inputs, ("mlm_logits", "sop_logits"))
    assert served["b_mlm_logits"].shape == (5, 37, 2000)
    for key, value in expected.items():
        np.testing.assert_allclose(served[key], value, atol=1e-5, err_msg=key)


@pytest.mark.parametrize("case, message", [
    ("missing", "--checkpoint_path {tmp}/nope does not exist"),
    ("no_vocab", "no vocabulary beside"),
    ("no_qa_head", "hf lacks weights the AlbertForQuestionAnswering model needs (missing "
                   "qa_outputs.weight"),
    ("pretraining_ckpt_as_qa", "lacks weights the AlbertForQuestionAnswering model needs"),
])
def test_export_errors(case, message, sample_vocab, tmp_path):
    model = AlbertForPreTraining(tiny_config()).build_for_config()
    argv = ["--head", "qa", "--output_dir", str(tmp_path / "out")]
    if case == "missing":
        argv += ["--checkpoint_path", str(tmp_path / "nope")]
    elif case == "no_vocab":
        save_pretrained(model, tmp_path / "hf")
        argv += ["--checkpoint_path", str(tmp_path / "hf")]
    elif case == "no_qa_head":
        save_pretrained(model, tmp_path / "hf", spm_model=sample_vocab)
        argv += ["--checkpoint_path", str(tmp_path / "hf")]
    else:
        trainer_checkpoint(model, tmp_path / "ckpt")
        argv += ["--checkpoint_path", str(tmp_path / "ckpt" / "ckpt-7"),
                 "--spm_model", sample_vocab]
    code, _, err = export(argv, check=False)
    assert code == 2, err[-2000:]
    assert message.format(tmp=tmp_path) in err
    assert "Traceback" not in err
    assert not (tmp_path / "out").exists()


# -- issue 24 ------------------------------------------------------------------------------------

def refused(result, message):
    """result: run_in_process's (exit status, stdout, stderr) of a command that must refuse
    with `message`, in one last line."""
    code, out, err = result
    assert code == 2, out[-2000:] + err[-3000:]
    last = err.strip().splitlines()[-1]
    assert last.startswith("error: ") and message in last, err[-3000:]
    assert "Traceback" not in err


def fake_saved_model(directory):
    directory.mkdir(parents=True)
    (directory / "saved_model.pb").write_bytes(b"model")
    (directory / "variables").mkdir()
    (directory / "variables" / "variables.index").write_bytes(b"index")


def tree(directory):
    return sorted(str(p.relative_to(directory)) for p in directory.rglob("*"))


def test_export_refuses_a_vocabulary_of_another_size_and_writes_nothing(sample_vocab, tmp_path):
    """A 2000-piece vocabulary for a 1000-token model: a server would map valid ids to the wrong
    tokens. Refused, given or found beside the weights, and nothing is written."""
    model = AlbertForQuestionAnswering(tiny_config(vocab_size=1000)).build_for_config()
    save_pretrained(model, tmp_path / "hf")  # which refuses the pair (issue 50 item 15)
    shutil.copyfile(sample_vocab, tmp_path / "hf" / "spiece.model")
    message = ("the vocabulary {} has 2000 pieces but the model's vocab_size is 1000: pass "
               "the --spm_model it was trained with")
    out = tmp_path / "serving" / "1"
    refused(export(["--checkpoint_path", str(tmp_path / "hf"), "--head", "qa", "--output_dir",
                    str(out)], check=False), message.format(tmp_path / "hf" / "spiece.model"))
    refused(export(["--checkpoint_path", str(tmp_path / "hf"), "--head", "qa", "--output_dir",
                    str(out), "--spm_model", sample_vocab], check=False),
            message.format(sample_vocab))
    assert not (tmp_path / "serving").exists() or not os.listdir(tmp_path / "serving")


def test_export_never_replaces_a_serving_base_path_a_run_or_its_checkpoint(sample_vocab, tmp_path):
    model = AlbertForQuestionAnswering(tiny_config()).build_for_config()
    ckpt = tmp_path / "run" / "checkpoints"
    trainer_checkpoint(model, ckpt)
    (ckpt / "run.json").write_text("{}")
    fake_saved_model(tmp_path / "serving" / "1")
    fake_saved_model(tmp_path / "serving" / "2")
    before = {d: tree(tmp_path / d) for d in ("run", "serving")}
    base = ["--head", "qa", "--spm_model", sample_vocab, "--checkpoint_path"]
    cases = [
        # TF Serving's base path instead of a version directory.
        ([str(ckpt), "--output_dir", str(tmp_path / "serving")],
         f"--output_dir {tmp_path / 'serving'} is not empty: it is a TF Serving base path "
         f"(versions 1, 2): give a version directory such as {tmp_path / 'serving' / '3'}, or "
         "pass --overwrite to replace it"),
        # The checkpoint directory being exported, even with --overwrite.
        ([str(ckpt), "--output_dir", str(ckpt), "--overwrite"],
         f"--output_dir {ckpt} would replace {ckpt}, which this command reads or writes"),
        # A directory above the checkpoint prefix being exported.
        ([str(ckpt / "ckpt-7"), "--output_dir", str(tmp_path / "run"), "--overwrite"],
         f"--output_dir {tmp_path / 'run'} would replace {ckpt}"),
        # A directory that holds some other run, with --overwrite.
        ([str(ckpt), "--output_dir", str(tmp_path), "--overwrite"], "would replace"),
    ]
    for argv, message in cases:
        refused(export(base + argv, check=False), message)
    other = tmp_path / "elsewhere"
    trainer_checkpoint(model, other / "old-run")
    refused(export(base + [str(ckpt), "--output_dir", str(other), "--overwrite"], check=False),
            f"--output_dir {other} holds a run or a checkpoint ({other / 'old-run'}/")
    assert {d: tree(tmp_path / d) for d in ("run", "serving")} == before

    # Somebody's files, no SavedModel: only with --overwrite.
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "todo.txt").write_text("keep")
    refused(export(base + [str(ckpt), "--output_dir", str(notes)], check=False),
            f"--output_dir {notes} is not empty: it holds todo.txt and no SavedModel, or pass "
            "--overwrite to replace it")
    assert (notes / "todo.txt").read_text() == "keep"
    export(base + [str(ckpt), "--output_dir", str(notes), "--overwrite"])
    assert (notes / "saved_model.pb").is_file() and not (notes / "todo.txt").exists()


@pytest.mark.parametrize("runner, train_file", [("run_squad", "train.json"),
                                                ("run_classifier", "train.tsv")])
def test_a_fine_tuners_export_dir_is_checked_before_any_work(runner, train_file, tmp_path):
    """The fine-tuners export at the end of the run: a bad --export_dir is refused at the
    start."""
    def run_squad(*argv):
        return run_in_process(runner, ["--train_file", tmp_path / train_file, "--model_size",
                                       "tiny", *argv])

    ckpt = tmp_path / "squad" / "checkpoints"
    refused(run_squad("--checkpoint_dir", str(ckpt), "--export_dir", str(tmp_path / "squad")),
            f"--export_dir {tmp_path / 'squad'} would replace {ckpt}, which this command reads "
            "or writes")
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "todo.txt").write_text("keep")
    refused(run_squad("--checkpoint_dir", str(ckpt), "--export_dir", str(notes)),
            f"--export_dir {notes} is not empty: it holds todo.txt and no SavedModel, or empty "
            "it first")
    assert not ckpt.exists() and (notes / "todo.txt").read_text() == "keep"


def test_export_refuses_an_output_dir_that_is_a_file_or_lies_under_one(sample_vocab, tmp_path):
    model = AlbertForQuestionAnswering(tiny_config()).build_for_config()
    save_pretrained(model, tmp_path / "hf", spm_model=sample_vocab)
    (tmp_path / "serving").write_text("not a directory")
    for out, where in ((tmp_path / "serving", "is a file"),
                       (tmp_path / "serving" / "1", f"lies under the file {tmp_path / 'serving'}")):
        refused(export(["--checkpoint_path", str(tmp_path / "hf"), "--head", "qa",
                        "--output_dir", str(out)], check=False),
                f"--output_dir {out} {where}: give a directory for the SavedModel")
    assert (tmp_path / "serving").read_text() == "not a directory"


def test_answer_output_that_is_a_directory_is_refused_before_inference(tmp_path):
    (tmp_path / "answers").mkdir()
    result = run_in_process("answer", ["--checkpoint_path", tmp_path, "--question", "Who?",
                                       "--context", "Mira did.", "--output",
                                       tmp_path / "answers"])
    refused(result, f"--output {tmp_path / 'answers'} is a directory: give a file name for the "
                  f"JSON lines, e.g. {tmp_path / 'answers' / 'answers.jsonl'}")
    assert sorted(os.listdir(tmp_path)) == ["answers"]  # no answers.tmp left behind


@pytest.mark.slow
def test_final_and_saved_model_directories_take_the_umask_mode(sample_records, sample_vocab,
                                                               tmp_path):
    """final/ (a run's Hugging Face export) and SavedModels were made 0700 (tempfile.mkdtemp,
    renamed into place) whatever the umask: unreadable to a model server or a teammate."""
    from helpers import PREDS, SEQ

    def cli(module, argv, umask):
        # The umask is the process's: this one's, set for the command and put back.
        saved = os.umask(umask)
        try:
            code, out, err = run_in_process(module.removeprefix("albert."), argv)
        finally:
            os.umask(saved)
        assert code == 0, out[-2000:] + err[-3000:]

    ckpt = tmp_path / "run"
    cli("albert.run_pretraining", [
        "--filesystem_prefix", str(sample_records), "--train_dir", "train", "--model_size",
        "tiny", "--config_override", "num_hidden_layers=1", "--spm_model", sample_vocab,
        "--max_seq_length", str(SEQ), "--max_predictions_per_seq", str(PREDS),
        "--per_gpu_batch_size", "2", "--total_steps", "1", "--checkpoint_dir", str(ckpt),
        "--log_dir", str(tmp_path / "logs"), "--skip_xla", "--no_progress"], 0o002)
    assert (ckpt / "final").stat().st_mode & 0o777 == 0o775
    cli("albert.export", ["--checkpoint_path", str(ckpt), "--head", "pretraining",
                          "--output_dir", str(tmp_path / "serving" / "1")], 0o022)
    for path in (tmp_path / "serving" / "1", tmp_path / "serving" / "1" / "assets"):
        assert path.stat().st_mode & 0o777 == 0o755, path
    assert sorted(os.listdir(tmp_path / "serving")) == ["1"]


# -- issue 23: the classifier ---------------------------------------------------------------------

@pytest.mark.e2e
def test_classification_export_keeps_the_labels_in_id_order(sample_vocab, tmp_path):
    """A Hugging Face classifier without a task card (from elsewhere): the SavedModel returns
    `logits` [batch, 3] as the Keras model does, and its card holds what the model knows: the
    task and its id2label in id order, no windows or vocabulary checksum nobody recorded.
    saved_model_cli and the fresh interpreter that serves it are processes by nature."""
    from albert import AlbertForSequenceClassification

    tf.keras.utils.set_random_seed(3)
    labels = ["pos", "neg", "neutral"]  # not sorted: their order is the ids'
    model = AlbertForSequenceClassification(tiny_config(), 3, labels).build_for_config()
    save_pretrained(model, tmp_path / "hf", spm_model=sample_vocab)
    out = tmp_path / "serving" / "1"
    _, stdout, _ = export(["--checkpoint_path", str(tmp_path / "hf"), "--head", "classification",
                           "--output_dir", str(out)])
    assert "(signature serving_default: logits)" in stdout
    assert json.loads((out / "assets" / "albert_task.json").read_text()) == {
        "task": "classification", "features": {}, "labels": labels, "vocabulary_sha256": None}
    shown = subprocess.run([SAVED_MODEL_CLI, "show", "--dir", str(out), "--tag_set", "serve",
                            "--signature_def", "serving_default"], capture_output=True,
                           text=True, timeout=120, env=ENV, check=True).stdout
    assert "outputs['logits'] tensor_info:\n      dtype: DT_FLOAT\n      shape: (-1, 3)" in shown
    inputs = serving_inputs(seed=3)
    served = serve_without_albert(out, inputs, tmp_path)
    for key, value in keras_outputs(model, inputs, ("logits",)).items():
        np.testing.assert_allclose(served[key], value, atol=1e-5, err_msg=key)


def test_classification_export_of_a_regression_model_and_of_another_task(sample_vocab,
                                                                         tmp_path, capsys):
    """One output: a regression card. A model fine-tuned for SQuAD (its card says so) is not
    exported as a classifier: refused naming the --head to use."""
    from albert import AlbertForSequenceClassification
    from albert.export import main as export_main
    from albert.io.savedmodel import export_saved_model
    from albert.io.task_card import write_task_card

    regression = AlbertForSequenceClassification(tiny_config(), 1).build_for_config()
    out = export_saved_model(regression, str(tmp_path / "serving" / "1"), "classification")
    card = json.loads((tmp_path / "serving" / "1" / "assets" / "albert_task.json").read_text())
    assert card["task"] == "regression" and card["labels"] is None
    assert tf.saved_model.load(out).signatures["serving_default"].structured_outputs[
        "logits"].shape[-1] == 1

    save_pretrained(regression, tmp_path / "hf", spm_model=sample_vocab)
    write_task_card(str(tmp_path / "hf"), {"task": "squad", "features": {}})
    with pytest.raises(SystemExit) as exit_code:
        export_main(["--checkpoint_path", str(tmp_path / "hf"), "--head", "classification",
                     "--output_dir", str(tmp_path / "serving" / "2")])
    assert exit_code.value.code == 2
    assert capsys.readouterr().err == (
        f"error: --head classification: {tmp_path / 'hf'} was fine-tuned for squad; export it "
        "with --head squad\n")
    assert not (tmp_path / "serving" / "2").exists()


# -- issue 34 item 6: a symbolic link, a mount point ----------------------------------------------


def tiny_classifier_dir(path, sample_vocab, labels=("pos", "neg")):
    from albert import AlbertForSequenceClassification

    model = AlbertForSequenceClassification(tiny_config(), len(labels),
                                            list(labels)).build_for_config()
    save_pretrained(model, path, spm_model=sample_vocab)
    return path


@pytest.mark.slow
def test_export_to_a_symlinked_version_writes_where_the_link_points(sample_vocab, tmp_path, capsys):
    """serving/1 -> elsewhere/1, which holds an older SavedModel: the new one lands in
    elsewhere/1, the link stays, and no .tmp-* is left beside either."""
    from albert.export import main as export_main

    hf = tiny_classifier_dir(tmp_path / "hf", sample_vocab)
    elsewhere = tmp_path / "elsewhere" / "1"
    assert export_main(["--checkpoint_path", str(hf), "--head", "classification",
                        "--output_dir", str(elsewhere)]) == 0
    (elsewhere / "assets" / "old").write_text("the previous version")
    (tmp_path / "serving").mkdir()
    (tmp_path / "serving" / "1").symlink_to(elsewhere, target_is_directory=True)
    assert export_main(["--checkpoint_path", str(hf), "--head", "classification",
                        "--output_dir", str(tmp_path / "serving" / "1")]) == 0
    assert (tmp_path / "serving" / "1").is_symlink()
    assert not (elsewhere / "assets" / "old").exists()  # replaced by the new export
    assert tf.saved_model.load(str(tmp_path / "serving" / "1")).signatures["serving_default"]
    assert os.listdir(tmp_path / "serving") == ["1"]
    assert os.listdir(tmp_path / "elsewhere") == ["1"]


def _renames_fail_busy(monkeypatch, fs, mount):
    """Every rename into or out of `mount`, and the exchange, fail as on a mount point (EBUSY)."""
    rename = os.rename

    def busy(src, dst):
        if str(mount) in (os.fspath(src), os.fspath(dst)):
            raise OSError(16, "Device or resource busy", os.fspath(dst))
        rename(src, dst)

    def exchange(a, b):
        raise OSError(16, "Device or resource busy", b)

    monkeypatch.setattr(os, "rename", busy)
    monkeypatch.setattr(fs, "exchange", exchange)


@pytest.mark.slow
def test_export_to_a_mount_point_is_one_line_and_leaves_it_whole(sample_vocab, tmp_path, capsys,
                                                                 monkeypatch):
    """A mount point cannot be renamed (EBUSY): refused before any work when it is seen as one,
    one line when the rename itself fails (simulated here), the directory and the model read
    left as they were."""
    from albert import fs
    from albert.export import main as export_main

    hf = tiny_classifier_dir(tmp_path / "hf", sample_vocab)
    mount = tmp_path / "mnt"
    mount.mkdir()
    (mount / "keep").write_text("the mount's own file")
    real_ismount = os.path.ismount
    monkeypatch.setattr(os.path, "ismount", lambda p: str(p) == str(mount) or real_ismount(p))
    argv = ["--checkpoint_path", str(hf), "--head", "classification", "--output_dir",
            str(mount), "--overwrite"]
    assert export_main(argv) == 2
    assert capsys.readouterr().err == (
        f"error: --output_dir {mount} is a mount point, which an export cannot replace (it "
        f"writes a new directory and renames it into place): give a directory inside it, e.g. "
        f"{mount / '1'}\n")

    # Not recognised as one (a bind mount of a directory onto itself, say): the rename says so.
    monkeypatch.setattr(os.path, "ismount", real_ismount)
    _renames_fail_busy(monkeypatch, fs, mount)
    with pytest.raises(SystemExit) as refused:
        export_main(argv)
    assert refused.value.code == 2
    err = capsys.readouterr().err
    assert err == (f"error: cannot replace {mount}: it is in use or a mount point (EBUSY), which "
                   f"a rename cannot move; give a directory inside it, e.g. {mount / '1'}\n")
    assert os.listdir(mount) == ["keep"]
    assert sorted(os.listdir(tmp_path)) == ["hf", "mnt"]  # no .tmp-* or .assets-* left


@pytest.mark.slow
def test_a_fine_tune_export_dir_on_a_mount_point_is_refused_and_keeps_the_run(
        sample_vocab, tmp_path, capsys, monkeypatch):
    """run_classifier --export_dir on a mount point: refused before any training when it is
    seen as one; when the rename at the end fails with EBUSY (simulated), one line, and the
    run's own outputs (checkpoints, final/, scores) are all there."""
    from albert import fs
    from albert.demo.classification_sample import write_task
    from albert.run_classifier import main as run_classifier

    write_task(str(tmp_path / "topic"), "topic", seed=0)
    mount = tmp_path / "mnt"
    mount.mkdir()
    argv = ["--train_file", str(tmp_path / "topic" / "train.tsv"), "--eval_file",
            str(tmp_path / "topic" / "dev.tsv"), "--model_size", "tiny", "--config_override",
            "num_hidden_layers=1", "--spm_model", sample_vocab, "--max_seq_length", "32",
            "--per_gpu_batch_size", "8", "--total_steps", "2", "--output_dir",
            str(tmp_path / "run"), "--export_dir", str(mount), "--no_progress", "--xla", "off"]
    real_ismount = os.path.ismount
    monkeypatch.setattr(os.path, "ismount", lambda p: str(p) == str(mount) or real_ismount(p))
    with pytest.raises(SystemExit) as refused:
        run_classifier(argv)
    assert refused.value.code == 2
    assert capsys.readouterr().err.splitlines()[-1] == (
        f"error: --export_dir {mount} is a mount point, which an export cannot replace (it "
        f"writes a new directory and renames it into place): give a directory inside it, e.g. "
        f"{mount / '1'}")
    assert not (tmp_path / "run").exists()  # before any work

    monkeypatch.setattr(os.path, "ismount", real_ismount)
    _renames_fail_busy(monkeypatch, fs, mount)
    with pytest.raises(SystemExit) as failed:
        run_classifier(argv)
    assert failed.value.code == 2
    err = capsys.readouterr().err
    assert [line for line in err.splitlines() if line.startswith("error: ")] == [
        f"error: cannot replace {mount}: it is in use or a mount point (EBUSY), which a rename "
        f"cannot move; give a directory inside it, e.g. {mount / '1'}"]
    assert "Traceback" not in err
    run = tmp_path / "run"
    assert (run / "eval_results.json").is_file() and (run / "eval_predictions.tsv").is_file()
    assert (run / "checkpoints" / "final" / "model.safetensors").is_file()
    assert (run / "checkpoints" / "ckpt-2.index").is_file()
    assert os.listdir(mount) == [] and sorted(os.listdir(tmp_path)) == ["mnt", "run", "topic"]


# -- issue 50 -------------------------------------------------------------------------------------

def exit_status(main, argv) -> int:
    try:
        return main(argv)
    except SystemExit as e:
        return e.code


@pytest.mark.parametrize("name", ["config.json", "albert_task.json"])
def test_a_model_file_that_is_not_utf8_is_one_line_in_export_and_answer(name, sample_vocab,
                                                                        tmp_path, capsys):
    """A config.json saved as Latin-1 gave albert.answer and albert.export a 20-frame
    UnicodeDecodeError and exit 1; the task card beside it is read the same way."""
    from albert import answer, export
    from albert.io.task_card import TASK_FILE

    model = tmp_path / "hf"
    card = {"task": "squad", "features": {"max_seq_length": 32}, "labels": None,
            "vocabulary_sha256": None}
    save_pretrained(AlbertForQuestionAnswering(tiny_config()).build_for_config(), model,
                    spm_model=sample_vocab, extra_json={TASK_FILE: card})
    path = model / name
    path.write_bytes(path.read_bytes().replace(b"{", b'{"note": "caf\xe9",', 1))
    offset = path.read_bytes().index(b"\xe9")
    expected = (f"{path}{' (of the model ' + str(model) + ')' if name == TASK_FILE else ''} is "
                f"not UTF-8 JSON: byte 0xe9 at offset {offset} (invalid continuation byte)")
    for main, argv in [(export.main, ["--head", "qa", "--output_dir", str(tmp_path / "out")]),
                       (answer.main, ["--question", "who?", "--context", "mira owns it."])]:
        assert exit_status(main, ["--checkpoint_path", str(model), *argv]) == 2
        err = capsys.readouterr().err
        assert err.startswith("error: ") and len(err.splitlines()) == 1, err
        assert expected in err, err
    assert not (tmp_path / "out").exists()
