"""albert.classify as a user runs it: run_classifier's predictions from the SavedModel its
--export_dir writes and from albert.export --head classification, from the checkpoint and its
Hugging Face export; regression scores; the model's own feature settings; clear errors."""

import json
import os
import re
import shutil
from typing import NamedTuple

import numpy as np
import pytest
from helpers import run_in_process

# The session's fine-tunes, shared with the other file that reads them (imported fixtures
# would be one fixture per module, each trained once); a plugin's asserts are rewritten only
# if it is registered before its first import.
from trained_classifier import SEQ, read_tsv


class Run(NamedTuple):
    returncode: int
    stdout: str
    stderr: str


def run_module(module, argv, check=True):
    """`python -m albert.<module> argv` in this process (a successful run's files and lines, a
    refusal's status and line): albert.classify, albert.export."""
    proc = Run(*run_in_process(module.removeprefix("albert."), argv))
    if check:
        assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    return proc


def read_jsonl(path):
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


@pytest.fixture(scope="module")
def topic_run(topic_fine_tune, topic_task):
    """The session's four-topic fine-tune (trained_classifier): its dev.tsv, scores,
    predictions, checkpoint and --export_dir SavedModel."""
    return topic_fine_tune, topic_task[0]


@pytest.fixture(scope="module")
def reference(topic_run, sample_vocab):
    """Softmax of the logits of every dev sentence, computed here: the checkpoint's Keras model
    on all of dev in one batch padded to max_seq_length (classify pads per batch of 64)."""
    import keras

    from albert.data import classification as data
    from albert.data.tokenization import load_tokenizer
    from albert.io.pretrained import load_model
    from albert.model.modeling import AlbertForSequenceClassification

    run, topic = topic_run
    examples = data.read_examples(str(topic / "dev.tsv"), data.Columns("sentence"),
                                  labelled=False)
    features, _ = data.featurize(examples, None, load_tokenizer(sample_vocab), SEQ)
    inputs = {k: np.zeros([len(features), SEQ], np.int32)
              for k in ("input_ids", "attention_mask", "token_type_ids")}
    for i, f in enumerate(features):
        inputs["input_ids"][i, :len(f.input_ids)] = f.input_ids
        inputs["attention_mask"][i, :len(f.input_ids)] = 1
    model = load_model(AlbertForSequenceClassification, str(run.ckpt), num_labels=4)
    logits = model(inputs, training=False)["logits"].numpy().astype(np.float64)
    keras.backend.clear_session()
    e = np.exp(logits - logits.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def check_same_as_run_classifier(rows, topic_run, reference):
    """Labels exactly run_classifier's dev predictions, probabilities the softmax of the logits
    (to 1e-5), labels in the model's id order."""
    run, _ = topic_run
    labels = json.loads((run.out / "eval_results.json").read_text())["labels"]
    predicted = read_tsv(run.out / "eval_predictions.tsv")
    assert len(rows) == len(predicted) == len(reference)
    assert [r["label"] for r in rows] == [p["prediction"] for p in predicted]
    assert len({r["label"] for r in rows}) > 1  # a model that answers one label proves little
    for row, expected in zip(rows, reference, strict=True):
        assert list(row["probabilities"]) == labels
        np.testing.assert_allclose(list(row["probabilities"].values()), expected, atol=1e-5)
        assert row["label"] == labels[int(np.argmax(expected))]


@pytest.mark.e2e
def test_saved_model_of_run_classifier_export_dir_gives_its_predictions(topic_run, reference,
                                                                         tmp_path):
    run, topic = topic_run
    saved = run.export
    assert f"SavedModel: {saved}" in run.stdout
    card = json.loads((saved / "assets" / "albert_task.json").read_text())
    result = json.loads((run.out / "eval_results.json").read_text())
    assert card["task"] == "classification" and card["labels"] == result["labels"]
    # The model's own record of its labels, which classify checks the card against.
    config = json.loads((saved / "assets" / "config.json").read_text())
    assert config["id2label"] == {str(i): name for i, name in enumerate(result["labels"])}
    assert card["features"]["max_seq_length"] == SEQ and card["vocabulary_sha256"]
    # No --max_seq_length: the model's own (64; a model without a card would be read at 128).
    classify = run_module("albert.classify", ["--checkpoint_path", str(saved), "--input",
                                              str(topic / "dev.tsv"), "--output",
                                              str(tmp_path / "labels.jsonl")])
    assert f"features as fine-tuned: --max_seq_length {SEQ}" in classify.stderr
    assert classify.stdout == ""
    rows = read_jsonl(tmp_path / "labels.jsonl")
    check_same_as_run_classifier(rows, topic_run, reference)
    dev = read_tsv(topic / "dev.tsv")
    assert [r["index"] for r in rows] == list(range(len(dev)))
    assert [r["text"] for r in rows] == [d["sentence"] for d in dev]
    hits = sum(r["label"] == d["label"] for r, d in zip(rows, dev, strict=True))
    assert hits / len(dev) == pytest.approx(result["accuracy"])
    assert re.search(r"classified \(compound \d+, debugger \d+, specialnames \d+, "
                     rf"string-methods \d+\) {len(dev)} input\(s\); wrote ", classify.stderr)


@pytest.mark.e2e
def test_albert_export_task_classification_gives_the_same(topic_run, reference, tmp_path):
    """albert.export --head classification from the checkpoint: the same card, the same
    answers, one text at a time (--max_seq_length that agrees with the model is accepted)."""
    run, topic = topic_run
    saved = tmp_path / "serving" / "2"
    proc = run_module("albert.export", ["--checkpoint_path", str(run.ckpt),
                                        "--head", "classification", "--output_dir", str(saved)])
    assert "exported classification SavedModel" in proc.stdout and "logits" in proc.stdout
    assert sorted(os.listdir(saved / "assets")) == ["albert_task.json", "config.json",
                                                    "spiece.model", "tokenizer_config.json"]
    assert (json.loads((saved / "assets" / "albert_task.json").read_text())
            == json.loads((run.export / "assets" / "albert_task.json").read_text()))
    dev = read_tsv(topic / "dev.tsv")
    one = run_module("albert.classify", ["--checkpoint_path", str(saved), "--text",
                                         dev[1]["sentence"], "--max_seq_length", str(SEQ),
                                         "--batch_size", "3"])
    (row,) = [json.loads(line) for line in one.stdout.splitlines()]
    assert row["text"] == dev[1]["sentence"] and set(row) == {"text", "label", "probabilities"}
    assert row["label"] == read_tsv(run.out / "eval_predictions.tsv")[1]["prediction"]
    np.testing.assert_allclose(list(row["probabilities"].values()), reference[1], atol=1e-5)


@pytest.mark.e2e
def test_checkpoint_and_its_hugging_face_export_give_the_same(topic_run, reference, tmp_path):
    """--checkpoint_path the run's checkpoint directory (labels from its run record) and its final/
    (labels from id2label and the card beside it), with JSON lines keyed "text"."""
    run, topic = topic_run
    dev = read_tsv(topic / "dev.tsv")
    (tmp_path / "dev.jsonl").write_text("".join(
        json.dumps({"id": f"d{i}", "text": d["sentence"]}) + "\n" + ("\n" if i == 3 else "")
        for i, d in enumerate(dev)))
    for model in (run.ckpt, run.ckpt / "final"):
        run_module("albert.classify", ["--checkpoint_path", str(model), "--input",
                                       str(tmp_path / "dev.jsonl"), "--output",
                                       str(tmp_path / "out.jsonl"), "--batch_size", "50"])
        rows = read_jsonl(tmp_path / "out.jsonl")
        assert [r["id"] for r in rows] == [f"d{i}" for i in range(len(dev))]
        check_same_as_run_classifier(rows, topic_run, reference)


@pytest.mark.e2e
def test_regression_scores_equal_run_classifier_predictions(regression_fine_tune, tmp_path):
    """No column flags: the pair columns the model was fine-tuned on (q, a) come from its
    card; each output line is the input object plus its score."""
    run = regression_fine_tune
    assert json.loads((run.export / "assets" / "albert_task.json").read_text())[
        "task"] == "regression"
    proc = run_module("albert.classify", ["--checkpoint_path", str(run.export), "--input",
                                          str(run.root / "dev.jsonl")])
    rows = [json.loads(line) for line in proc.stdout.splitlines()]
    predicted = read_tsv(run.out / "predictions.tsv")
    # The same features in the same batches through the same float32 graph: the same numbers.
    assert [r["score"] for r in rows] == [float(p["prediction"]) for p in predicted]
    assert len({p["prediction"] for p in predicted}) > 1
    dev = read_jsonl(run.root / "dev.jsonl")
    assert [{k: v for k, v in r.items() if k != "score"} for r in rows] == dev
    # A pair model asked about one text is refused: those are not the features it learnt.
    single = run_module("albert.classify", ["--checkpoint_path", str(run.export), "--text",
                                            "question 1 ?"], check=False)
    refused(single, f"--checkpoint_path {run.export} was fine-tuned on pairs of texts "
                    "(columns q, a) but --text gives single texts: give the second text with "
                    "--text_b")


@pytest.mark.e2e
def test_metric_regexes_match_run_classifier_log_lines(topic_fine_tune, regression_fine_tune):
    """The launcher's classifier MetricDefinitions against the fixtures' real eval lines (SageMaker
    reports a regex's last match); none of them matches the other task's line."""
    import importlib.util

    from helpers import REPO_ROOT

    spec = importlib.util.spec_from_file_location(
        "launch_sagemaker", os.path.join(REPO_ROOT, "scripts", "launch_sagemaker.py"))
    launcher = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(launcher)
    regexes = {m["Name"]: m["Regex"] for m in launcher.metric_definitions(
        launcher.entry_task("run_classifier")) if m["Name"].startswith("eval:")
        and m["Name"] != "eval:loss"}
    assert set(regexes) == {"eval:accuracy", "eval:mcc", "eval:f1", "eval:pearson",
                            "eval:spearman"}
    for run, names in ((topic_fine_tune, ("accuracy", "mcc")),
                       (regression_fine_tune, ("pearson", "spearman"))):
        scores = json.loads((run.out / "eval_results.json").read_text())
        for name, regex in regexes.items():
            found = re.findall(regex, run.stdout)
            if name.split(":")[1] in names:
                assert float(found[-1]) == pytest.approx(scores[name.split(":")[1]], abs=1e-4)
            else:
                assert not found, name  # f1: two labels only; the other task's scores


def refused(proc, message):
    assert proc.returncode == 2, proc.stdout[-2000:] + proc.stderr[-3000:]
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1 and message in errors[0], proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr


def other_vocabulary(vocab, path):
    """A vocabulary of the same pieces with one score changed: the same size, another
    checksum."""
    from sentencepiece import sentencepiece_model_pb2

    proto = sentencepiece_model_pb2.ModelProto()
    proto.ParseFromString(open(vocab, "rb").read())
    proto.pieces[10].score += 1.0
    path.write_bytes(proto.SerializeToString())
    return str(path)


@pytest.mark.e2e
@pytest.mark.parametrize("case", ["max_seq_length", "vocabulary", "output_dir", "pair",
                                  "both_inputs", "no_input", "column", "squad_model"])
def test_clear_errors_before_the_model_runs(case, topic_run, sample_vocab, tmp_path):
    run, topic = topic_run
    saved = str(run.export)
    dev = str(topic / "dev.tsv")
    argv, message = {
        "max_seq_length": (["--text", "x", "--max_seq_length", "32"],
                           f"--max_seq_length 32 differs from the {SEQ} that --checkpoint_path "
                           f"{saved} was fine-tuned with: drop --max_seq_length"),
        "vocabulary": (["--text", "x", "--spm_model",
                        other_vocabulary(sample_vocab, tmp_path / "other.model")],
                       f"the vocabulary {tmp_path / 'other.model'} is not the one "
                       f"--checkpoint_path {saved} was fine-tuned with (its content differs)"),
        "output_dir": (["--input", dev, "--output", str(tmp_path)],
                       f"--output {tmp_path} is a directory: give a file name for the JSON "
                       f"lines, e.g. {tmp_path / 'labels.jsonl'}"),
        "pair": (["--text", "x", "--text_b", "y"],
                 f"--checkpoint_path {saved} was fine-tuned on single texts (column sentence) "
                 "but --text gives pairs: drop --text_b"),
        "both_inputs": (["--text", "x", "--input", dev],
                        "give either --text (with --text_b for a pair) or --input"),
        "no_input": (["--input", str(tmp_path / "nope.jsonl")],
                     f"--input {tmp_path / 'nope.jsonl'} does not exist"),
        "column": (["--input", dev, "--text_a", "text"],
                   "dev.tsv has no column 'text' (--text_a); its columns are: 'sentence', "
                   "'label'"),
        "squad_model": (["--text", "x"], "was fine-tuned for squad, not classification (ask "
                                         "it with python -m albert.answer)"),
    }[case]
    if case == "squad_model":
        from albert.io.task_card import write_task_card

        (tmp_path / "qa").mkdir()
        write_task_card(str(tmp_path / "qa"), {"task": "squad", "features": {}})
        saved = str(tmp_path / "qa")
    before = sorted(os.listdir(tmp_path))
    refused(run_module("albert.classify", ["--checkpoint_path", saved, *argv], check=False),
            message)
    assert sorted(os.listdir(tmp_path)) == before  # nothing written


@pytest.mark.e2e
@pytest.mark.parametrize("change", ["fewer", "reversed"])
def test_a_card_that_disagrees_with_a_copied_model_is_refused(change, topic_run, tmp_path):
    """A SavedModel whose card names other labels than its outputs, or its labels in another
    order (issue 34 item 7: every predicted label flipped): an error, not a guess."""
    run, _ = topic_run
    shutil.copytree(run.export, tmp_path / "m")
    path = tmp_path / "m" / "assets" / "albert_task.json"
    card = json.loads(path.read_text())
    labels = card["labels"]
    card["labels"] = labels[:3] if change == "fewer" else labels[::-1]
    path.write_text(json.dumps(card))
    refused(run_module("albert.classify", ["--checkpoint_path", str(tmp_path / "m"), "--text",
                                           "x"], check=False),
            f"--checkpoint_path {tmp_path / 'm'}: its task card names 3 labels but its "
            "config.json (id2label) 4" if change == "fewer" else
            f"--checkpoint_path {tmp_path / 'm'}: its task card's labels "
            f"{','.join(labels[::-1])} (in id order) are not its config.json's id2label "
            f"{','.join(labels)}")


# -- issue 34: the card against the model, its shape, headers, columns by position ---------------
# In this process, with the model's loading replaced where a test gets that far: every check
# here comes before TensorFlow would load a model.


def fake_model(monkeypatch, labels, seen=None):
    """albert.cli.serving_model.load_classifier (what classify's run loads) replaced: a model of
    len(labels) outputs whose logits favour the label whose index is the text's length modulo
    their number (so each label is predicted); `seen` collects the input ids it is asked
    about."""
    from albert.cli import serving_model
    from albert.model.config import AlbertConfig

    def load(path, card):
        def logits_fn(input_ids, attention_mask, token_type_ids):
            if seen is not None:
                seen.append(np.asarray(input_ids))
            lengths = np.asarray(attention_mask).sum(axis=1)
            return np.eye(len(labels), dtype=np.float32)[lengths % len(labels)] * 5

        return logits_fn, AlbertConfig.from_preset("tiny", vocab_size=2000), len(labels), None

    monkeypatch.setattr(serving_model, "load_classifier", load)


def model_dir(path, sample_vocab, card, id2label=None, saved_model=False):
    """A model directory as far as classify reads it before loading: its card, its
    config.json (id2label), its vocabulary; a SavedModel's in assets/."""
    from albert.io.task_card import write_task_card

    where = path / "assets" if saved_model else path
    where.mkdir(parents=True)
    if saved_model:
        (path / "saved_model.pb").write_bytes(b"")
    config = {"model_type": "albert", "vocab_size": 2000}
    if id2label is not None:
        config["id2label"] = {str(i): name for i, name in enumerate(id2label)}
    (where / "config.json").write_text(json.dumps(config))
    shutil.copyfile(sample_vocab, where / "spiece.model")
    if card is not None:
        write_task_card(str(where), card)
    return str(path)


def one_error(capsys):
    err = capsys.readouterr().err
    errors = [line for line in err.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1 and "Traceback" not in err, err
    return errors[0]


CARD = {"task": "classification", "features": {"max_seq_length": 32},
        "labels": ["neg", "pos"], "vocabulary_sha256": None}


@pytest.mark.parametrize("saved_model", [False, True], ids=["hugging_face", "saved_model"])
def test_a_card_whose_labels_disagree_with_the_model_is_refused_before_it_loads(
        saved_model, sample_vocab, tmp_path, capsys, monkeypatch):
    """The card's labels reversed against config.json's id2label (which would flip every
    predicted label), or another number of them: one line, exit 2, before the model loads."""
    from albert import classify
    from albert.cli import serving_model

    def loaded(*_):
        raise AssertionError("the model was loaded")

    monkeypatch.setattr(serving_model, "load_classifier", loaded)
    reversed_card = {**CARD, "labels": ["pos", "neg"]}
    model = model_dir(tmp_path / "m", sample_vocab, reversed_card, ["neg", "pos"], saved_model)
    assert classify.main(["--checkpoint_path", model, "--text", "good"]) == 2
    assert one_error(capsys) == (
        f"error: --checkpoint_path {model}: its task card's labels pos,neg (in id order) are "
        "not its config.json's id2label neg,pos: the card does not belong to this model "
        "(restore the one its export wrote)")
    three = model_dir(tmp_path / "m3", sample_vocab, {**CARD, "labels": ["a", "b", "c"]},
                      ["neg", "pos"], saved_model)
    assert classify.main(["--checkpoint_path", three, "--text", "good"]) == 2
    assert one_error(capsys) == (f"error: --checkpoint_path {three}: its task card names 3 "
                                 "labels but its config.json (id2label) 2: the card does not "
                                 "belong to this model")
    regression = model_dir(tmp_path / "r", sample_vocab, {**CARD, "task": "regression",
                                                          "labels": None}, ["neg", "pos"],
                           saved_model)
    assert classify.main(["--checkpoint_path", regression, "--text", "good"]) == 2
    assert "its task card says regression but its config.json names 2 labels" in one_error(
        capsys)


def test_a_card_that_agrees_with_the_model_names_the_outputs(sample_vocab, tmp_path, capsys,
                                                             monkeypatch):
    from albert import classify

    fake_model(monkeypatch, ["neg", "pos"])
    model = model_dir(tmp_path / "m", sample_vocab, CARD, ["neg", "pos"], saved_model=True)
    assert classify.main(["--checkpoint_path", model, "--text", "good"]) == 0
    (row,) = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert list(row["probabilities"]) == ["neg", "pos"]
    # An export without id2label (older ones; a trainer checkpoint's config.json): the card.
    older = model_dir(tmp_path / "old", sample_vocab, CARD, None, saved_model=True)
    assert classify.main(["--checkpoint_path", older, "--text", "good"]) == 0


@pytest.mark.parametrize("change, message", [
    ({"labels": "abcd"}, '"labels" must be a list of label names in id order, got the string '
                         '"abcd"'),
    ({"labels": ["neg", 1]}, '"labels" must be a list of label names in id order, got a list'),
    ({"labels": ["neg", "neg"]}, '"labels" names a label twice: [\'neg\', \'neg\']'),
    ({"features": ["max_seq_length", 32]}, '"features" must be a JSON object of feature '
                                           'settings, got a list'),
    ({"features": {"max_seq_length": "128"}}, '"features" "max_seq_length" must be a positive '
                                              'whole number, got the string "128"'),
    ({"task": ["classification"]}, '"task" must be a string, got a list'),
])
def test_a_card_of_the_wrong_shape_is_one_line_naming_the_file_and_entry(change, message,
                                                                         sample_vocab, tmp_path,
                                                                         capsys):
    """Valid JSON of the wrong shape in the card: one line naming the file and the entry, exit
    2, no traceback (labels "abcd" are not four labels)."""
    from albert import classify
    from albert.io.task_card import TASK_FILE

    model = model_dir(tmp_path / "m", sample_vocab, {**CARD, **change})
    assert classify.main(["--checkpoint_path", model, "--text", "good"]) == 2
    assert one_error(capsys) == (f"error: --checkpoint_path {model}: {tmp_path / 'm' / TASK_FILE}"
                                 f" (of the model {model}): {message}")


def test_a_no_header_input_whose_first_row_looks_like_a_header_is_predicted_and_warned(
        sample_vocab, tmp_path, capsys, caplog, monkeypatch):
    """GLUE's test.tsv (index<TAB>sentence) read with --no_header: its header row is predicted
    like a text. It still is (it may be a text), but a warning names the line and the way on."""
    from albert import classify

    fake_model(monkeypatch, ["neg", "pos"])
    model = model_dir(tmp_path / "m", sample_vocab, CARD, ["neg", "pos"])
    (tmp_path / "test.tsv").write_text("index\tsentence\n0\tgood film\n1\tbad film\n")
    argv = ["--checkpoint_path", model, "--input", str(tmp_path / "test.tsv"), "--no_header",
            "--text_a", "1"]
    assert classify.main(argv) == 0
    assert len(capsys.readouterr().out.splitlines()) == 3
    warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert warnings == [
        f"{tmp_path / 'test.tsv'} line 1 looks like a header (its text 'sentence' is a column "
        "name), but --no_header reads it as a text to predict, and predicts it: drop "
        "--no_header and name the columns, or remove that row"]
    caplog.clear()
    (tmp_path / "plain.tsv").write_text("0\tgood film\n1\tbad film\n")
    assert classify.main([*argv[:3], str(tmp_path / "plain.tsv"), *argv[4:]]) == 0
    assert [r for r in caplog.records if r.levelname == "WARNING"] == []


def test_a_text_column_by_position_is_found_where_its_header_name_is_not(sample_vocab, tmp_path,
                                                                         capsys, monkeypatch):
    """SST-2's train file says label<TAB>sentence, its dev file label<TAB>content: --text_a 1
    finds the text in both, as --text_a sentence finds it only in the first."""
    from albert import classify

    seen = []
    fake_model(monkeypatch, ["neg", "pos"], seen)
    model = model_dir(tmp_path / "m", sample_vocab, CARD, ["neg", "pos"])
    (tmp_path / "dev.tsv").write_text("label\tcontent\n0\tgood film\n1\tbad film\n")
    argv = ["--checkpoint_path", model, "--input", str(tmp_path / "dev.tsv")]
    assert classify.main([*argv, "--text_a", "1"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [r["text"] for r in rows] == ["good film", "bad film"]
    assert classify.main([*argv, "--text_a", "sentence"]) == 2
    assert one_error(capsys) == (
        f"error: {tmp_path / 'dev.tsv'} has no column 'sentence' (--text_a); its columns are: "
        "'label', 'content' (or give a column's position, from 0)")
    assert classify.main([*argv, "--text_a", "2"]) == 2
    assert one_error(capsys) == (f"error: {tmp_path / 'dev.tsv'}: --text_a 2 is past its 2 "
                                 "columns (numbered from 0: 'label', 'content')")


@pytest.mark.slow
def test_labels_keep_their_id_order_from_training_to_classify_and_columns_go_by_position(
        sample_vocab, tmp_path, capsys, monkeypatch):
    """run_classifier --labels pos,neg (not sorted: pos is id 0) on SST-2's layout, whose train
    file says label<TAB>sentence and dev file label<TAB>content, the columns given by position.
    Every record of the labels keeps --labels' order: the run record, final/'s card and
    id2label, the SavedModel's card and id2label; and classify, asked about the export with
    the same positions, names its outputs in that order."""
    from albert import classify
    from albert.run_classifier import main as run_classifier

    rows = [("pos", "a fine and warm film"), ("neg", "a dull and cold film"),
            ("pos", "warm"), ("neg", "cold and dull")] * 4
    (tmp_path / "train.tsv").write_text("label\tsentence\n"
                                        + "".join(f"{y}\t{x}\n" for y, x in rows))
    (tmp_path / "dev.tsv").write_text("label\tcontent\n"
                                      + "".join(f"{y}\t{x}\n" for y, x in rows[:4]))
    run, saved = tmp_path / "run", tmp_path / "serving" / "1"
    assert run_classifier([
        "--train_file", str(tmp_path / "train.tsv"), "--eval_file", str(tmp_path / "dev.tsv"),
        "--text_a", "1", "--label", "0", "--labels", "pos,neg", "--model_size", "tiny",
        "--config_override", "num_hidden_layers=1", "--spm_model", sample_vocab,
        "--max_seq_length", "16", "--per_gpu_batch_size", "4", "--total_steps", "2",
        "--output_dir", str(run), "--export_dir", str(saved), "--no_progress",
        "--xla", "off"]) == 0
    order = ["pos", "neg"]
    assert json.loads((run / "eval_results.json").read_text())["labels"] == order
    assert json.loads((run / "checkpoints" / "run.json").read_text())["spec"]["labels"] == order
    final = run / "checkpoints" / "final"
    assert json.loads((final / "albert_task.json").read_text())["labels"] == order
    assert json.loads((final / "config.json").read_text())["id2label"] == {"0": "pos",
                                                                          "1": "neg"}
    assert json.loads((saved / "assets" / "albert_task.json").read_text())["labels"] == order
    assert json.loads((saved / "assets" / "config.json").read_text())["id2label"] == {
        "0": "pos", "1": "neg"}
    capsys.readouterr()
    # The card's columns (by position) read the dev file, whose header names another column.
    assert classify.main(["--checkpoint_path", str(saved), "--input",
                          str(tmp_path / "dev.tsv"), "--no_progress"]) == 0
    out = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [r["text"] for r in out] == [x for _, x in rows[:4]]
    assert all(list(r["probabilities"]) == order for r in out)
