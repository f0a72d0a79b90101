"""albert.answer as a user runs it (its main, in this process): the same answers as run_squad's
predictions.json, from a checkpoint and from an exported SavedModel, one question at a time, and
clear errors."""

import json

import pytest
from helpers import run_in_process
from trained_squad import WINDOW as FINE_TUNED_WINDOW

from albert.demo.squad_sample import write_sample
from albert.io.pretrained import save_pretrained

# The settings both commands get: the shared fine-tune's windows (the longer contexts span
# several). A briefly trained model prefers "no answer" almost everywhere, which would leave few
# spans to compare; with this threshold both commands give every question its best span, and the
# no-answer rule is checked separately (null scores, and a threshold that splits the questions).
WINDOW = [*FINE_TUNED_WINDOW, "--null_score_diff_threshold", "1e9"]
# Short windows (most contexts span several) for the tests that make up their logits.
SHORT_WINDOW = ["--max_seq_length", "96", "--doc_stride", "48", "--max_query_length", "24"]


def run_module(module, argv, check=True):
    """`python -m <module> argv` as its main in this process: (exit status, stdout, stderr)."""
    code, out, err = run_in_process(module.removeprefix("albert."), argv)
    if check:
        assert code == 0, out[-2000:] + err[-3000:]
    return code, out, err


@pytest.fixture
def finetuned(squad_fine_tune):
    """The shared fine-tune's directory, run_squad's dev predictions at the threshold above
    (every question its best span), its null score differences, and the dev questions as
    JSON lines (questions.jsonl in the directory)."""
    run = squad_fine_tune
    return run.dir, run.answered, run.null_odds, run.questions


def answers_of(path):
    return [json.loads(line) for line in open(path, encoding="utf-8")]


def check_same_as_run_squad(rows, finetuned, threshold=1e9):
    """rows (answer's output) against run_squad's predictions and null odds: the same span for
    every question, the same null score difference, and "" exactly where it exceeds
    `threshold`."""
    _, predictions, null_odds, lines = finetuned
    assert [r["id"] for r in rows] == [q["id"] for q in lines]
    assert all(predictions.values())  # at 1e9 run_squad answered every question
    expected = {q: ("" if null_odds[q] > threshold else span) for q, span in predictions.items()}
    assert {r["id"]: r["answer"] for r in rows} == expected
    for r in rows:
        assert r["question"] == next(q["question"] for q in lines if q["id"] == r["id"])
        assert r["best_span"] == predictions[r["id"]] and isinstance(r["score"], float)
        assert r["null_score_diff"] == pytest.approx(null_odds[r["id"]], abs=1e-4)
        assert r["no_answer"] == (r["answer"] == "")
    assert len(set(predictions.values())) > 5  # spans differ from question to question


@pytest.mark.slow
def test_answers_from_checkpoint_equal_run_squad(finetuned, tmp_path):
    out = finetuned[0]
    run_module("albert.answer", ["--checkpoint_path", str(out / "ckpt" / "final"), "--input",
                                 str(out / "questions.jsonl"), "--output",
                                 str(tmp_path / "from_hf.jsonl"), "--batch_size", "16", *WINDOW])
    check_same_as_run_squad(answers_of(tmp_path / "from_hf.jsonl"), finetuned)


@pytest.mark.slow
def test_answers_from_saved_model_equal_run_squad(finetuned):
    out, _, null_odds, _ = finetuned
    # serving/1: the SavedModel run_squad's --export_dir wrote at the end of the fine-tune.
    # A threshold between two of run_squad's null score differences, in the widest gap near the
    # middle, so that some questions get "" and the rest their span.
    diffs = sorted(null_odds.values())
    middle = diffs[len(diffs) // 4:3 * len(diffs) // 4 + 1]
    low, high = max(zip(middle[:-1], middle[1:], strict=True), key=lambda p: p[1] - p[0])
    assert high - low > 1e-3
    threshold = (low + high) / 2
    _, stdout, stderr = run_module("albert.answer", [
        "--checkpoint_path", str(out / "serving" / "1"), "--input", str(out / "questions.jsonl"),
        "--batch_size", "16", *WINDOW, "--null_score_diff_threshold", str(threshold)])
    rows = [json.loads(line) for line in stdout.splitlines()]
    check_same_as_run_squad(rows, finetuned, threshold)
    answered = sum(not r["no_answer"] for r in rows)
    assert 0 < answered < len(rows)
    assert "window" in stderr  # the progress bar


@pytest.mark.slow
def test_one_question(finetuned, tmp_path):
    out, predictions, _, lines = finetuned
    question = lines[0]
    _, stdout, _ = run_module("albert.answer", ["--checkpoint_path", str(out / "ckpt" / "final"),
                                                "--question", question["question"], "--context",
                                                question["context"], *WINDOW, "--output",
                                                str(tmp_path / "one.jsonl")])
    assert f"answer: {predictions[question['id']]}\n" in stdout
    assert "no_answer: false\n" in stdout
    (row,) = answers_of(tmp_path / "one.jsonl")
    assert row["answer"] == predictions[question["id"]]
    assert f"score: {row['score']:.4f}\n" in stdout


@pytest.mark.parametrize("case, message", [
    ("missing_input", "--input {tmp}/nope.jsonl does not exist"),
    ("empty_question", "--question is empty"),
    ("no_context", "--question needs a non-empty --context"),
    ("bad_line", "bad.jsonl line 2 is not valid JSON"),
    ("blank_question", "bad.jsonl line 1: \"question\" must be a non-empty string"),
    ("missing_model", "--checkpoint_path {tmp}/nope does not exist"),
    ("pretraining_export", "is not a question-answering SavedModel (its serving_default "
                           "signature returns mlm_logits, sop_logits"),
    ("long_window", "--max_seq_length 384 exceeds the model's max_position_embeddings (64)"),
])
def test_clear_errors(case, message, sample_vocab, tmp_path):
    from albert import AlbertConfig, AlbertForPreTraining, AlbertForQuestionAnswering

    model = str(tmp_path)
    argv = ["--question", "who?", "--context", "it is mira."]
    if case == "missing_input":
        argv = ["--input", str(tmp_path / "nope.jsonl")]
    elif case == "empty_question":
        argv = ["--question", "  ", "--context", "it is mira."]
    elif case == "no_context":
        argv = ["--question", "who?"]
    elif case in ("bad_line", "blank_question"):
        first = {"question": "who?", "context": "it is mira."}
        if case == "blank_question":
            first["question"] = ""
        (tmp_path / "bad.jsonl").write_text(json.dumps(first) + "\n{oops\n")
        argv = ["--input", str(tmp_path / "bad.jsonl")]
    elif case == "missing_model":
        model = str(tmp_path / "nope")
    elif case == "pretraining_export":
        from albert.io.savedmodel import export_saved_model

        config = AlbertConfig.from_preset("tiny", vocab_size=2000, max_position_embeddings=64)
        model = export_saved_model(AlbertForPreTraining(config).build_for_config(),
                                   str(tmp_path / "serving" / "1"), "pretraining", sample_vocab)
    elif case == "long_window":
        config = AlbertConfig.from_preset("tiny", vocab_size=2000, max_position_embeddings=64)
        save_pretrained(AlbertForQuestionAnswering(config).build_for_config(),
            tmp_path / "hf", spm_model=sample_vocab)
        model = str(tmp_path / "hf")
    code, _, err = run_module("albert.answer", ["--checkpoint_path", model, *argv], check=False)
    assert code == 2, err[-2000:]
    assert message.format(tmp=tmp_path) in err, err[-2000:]
    assert "Traceback" not in err


# -- answers are whole words (issue 25) -----------------------------------------------------------


def cut_words(context: str, text: str) -> bool:
    """Whether `text` starts or ends inside a word wherever it occurs in `context` (a letter or
    digit on both sides of a boundary), written apart from the code under test."""
    at = context.find(text)
    while at != -1:
        end = at + len(text)
        cut_start = at > 0 and context[at - 1].isalnum() and text[0].isalnum()
        cut_end = end < len(context) and context[end].isalnum() and text[-1].isalnum()
        if not cut_start and not cut_end:
            return False
        at = context.find(text, at + 1)
    return True


def fake_logits(input_ids, attention_mask, token_type_ids):
    """Logits that depend only on each token's id and position, as a model's would on the same
    window, so that both commands' batching and padding cannot change them."""
    import numpy as np

    ids = np.asarray(input_ids, np.float64)
    positions = np.arange(ids.shape[1])[None, :]
    start = 4 * np.sin(ids * 12.9898 + positions * 78.233)
    end = 4 * np.cos(ids * 4.1414 + positions * 3.7)
    return start.astype(np.float32), end.astype(np.float32)


def test_answer_and_run_squad_read_the_same_logits_the_same_way(sample_vocab, tmp_path,
                                                                  monkeypatch, capsys):
    """The same logits give the same answer texts through answer and run_squad's scoring (one
    post-processing), and those texts are whole words where the raw pieces were not."""

    from albert import answer
    from albert.data import squad, squad_records
    from albert.data.tokenization import load_tokenizer
    from albert.tasks.squad import score
    from albert.tasks.squad_options import SquadOptions
    from albert.train.run_spec import Data, Outputs, RunSpec

    _, dev = write_sample(str(tmp_path / "data"), "v2.0", train_questions=1, dev_questions=40,
                          seed=5)
    examples, data, _ = squad.read_squad(dev)
    tokenizer = load_tokenizer(sample_vocab)
    args = answer.parse_args(["--checkpoint_path", "unused", "--input", dev, "--no_progress",
                              "--batch_size", "7", "--squad_version", "squadv2",
                              *SHORT_WINDOW])
    settings = squad.FeatureSettings(args.max_seq_length, args.doc_stride, args.max_query_length)
    features = squad.featurize(examples, tokenizer, settings, training=False)
    prefix = str(tmp_path / "cache")
    squad_records.write_feature_cache(features, prefix)
    start, end = fake_logits([f.input_ids for f in features], None, None)
    results = {i: (start[i], end[i]) for i in range(len(features))}
    def squad_spec(threshold):
        return RunSpec(task="squad", data=Data(predict=dev),
                       outputs=Outputs(output_dir=str(tmp_path / "pred")),
                       options=SquadOptions(n_best_size=args.n_best_size,
                                            max_answer_length=args.max_answer_length,
                                            null_score_diff_threshold=threshold))

    score(squad_spec(0.0), examples, data, prefix, results, "v2.0")
    # Again at a threshold that leaves some questions without an answer.
    null_odds = json.loads((tmp_path / "pred" / "null_odds.json").read_text())
    args.null_score_diff_threshold = float(sorted(null_odds.values())[len(null_odds) // 2]) + 1e-4
    score(squad_spec(args.null_score_diff_threshold), examples, data, prefix, results, "v2.0")
    capsys.readouterr()
    predictions = json.loads((tmp_path / "pred" / "predictions.json").read_text())
    nbest = json.loads((tmp_path / "pred" / "nbest_predictions.json").read_text())
    records = [{"question": e.question, "context": e.context} for e in examples]
    rows = answer.answer_all(records, fake_logits, tokenizer, args)
    assert [r["answer"] for r in rows] == [predictions[e.qid] for e in examples]
    assert [r["best_span"] for r in rows] == [
        next(c["text"] for c in nbest[e.qid] if c["text"]) for e in examples]
    assert 0 < sum(r["no_answer"] for r in rows) < len(rows)
    for row in rows:
        assert not cut_words(row["context"], row["best_span"]), row["best_span"]
    # The pieces alone: many of these spans cut a word, so the check above could fail.
    monkeypatch.setattr(squad, "whole_word_span", lambda context, a, b: (a, b))
    raw = answer.answer_all(records, fake_logits, tokenizer, args)
    cut = [r["best_span"] for r in raw if cut_words(r["context"], r["best_span"])]
    assert len(cut) >= len(raw) // 4, cut


def test_padding_batch_and_max_give_the_same_answers(sample_vocab, tmp_path):
    """--padding batch (the default) calls the model on batches of one length bucket, padded to
    it; --padding max on windows padded to --max_seq_length. The answers, scores and null score
    differences are the same, even with padding that would win every n-best place were it
    read."""
    import numpy as np

    from albert import answer
    from albert.data import squad
    from albert.data.tokenization import load_tokenizer

    _, dev = write_sample(str(tmp_path / "data"), "v2.0", train_questions=1, dev_questions=40,
                          seed=6)
    examples, _, _ = squad.read_squad(dev)
    records = [{"question": e.question, "context": e.context} for e in examples]
    tokenizer = load_tokenizer(sample_vocab)
    calls = {"batch": [], "max": []}

    def rows_with(padding):
        def logits(input_ids, attention_mask, token_type_ids):
            calls[padding].append(np.asarray(input_ids).shape)
            start, end = fake_logits(input_ids, attention_mask, token_type_ids)
            pad = np.asarray(attention_mask) == 0
            start[pad] = end[pad] = 50.0  # far above every real token's
            return start, end

        args = answer.parse_args(["--checkpoint_path", "unused", "--input", dev, "--no_progress",
                                  "--batch_size", "8", "--squad_version", "squadv2",
                                  "--max_seq_length", "192", "--doc_stride", "64",
                                  "--max_query_length", "24", "--padding", padding])
        return answer.answer_all(records, logits, tokenizer, args)

    batch, fixed = rows_with("batch"), rows_with("max")
    assert [r["answer"] for r in batch] == [r["answer"] for r in fixed]
    assert [r["best_span"] for r in batch] == [r["best_span"] for r in fixed]
    assert all(r["best_span"] for r in batch)
    for a, b in zip(batch, fixed, strict=True):
        assert a["score"] == pytest.approx(b["score"], abs=1e-5)
        assert a["null_score_diff"] == pytest.approx(b["null_score_diff"], abs=1e-5)
    assert {shape[1] for shape in calls["max"]} == {192}
    widths = {shape[1] for shape in calls["batch"]}
    assert len(widths) >= 2 and all(w % 64 == 0 or w == 192 for w in widths)
    assert sum(s[0] for s in calls["batch"]) == sum(s[0] for s in calls["max"])


@pytest.mark.slow
def test_run_squad_predictions_are_whole_words(finetuned):
    """End to end: every non-empty answer and n-best text run_squad wrote for the briefly trained
    model starts and ends on a word boundary of its context."""
    out, predictions, _, lines = finetuned
    contexts = {q["id"]: q["context"] for q in lines}
    answers = [(q, text) for q, text in predictions.items() if text]
    assert len(answers) == len(lines)  # --null_score_diff_threshold 1e9: every question answered
    assert [text for q, text in answers if cut_words(contexts[q], text)] == []
    nbest = json.loads((out / "answered" / "nbest_predictions.json").read_text())
    texts = [(q, c["text"]) for q, entries in nbest.items() for c in entries if c["text"]]
    assert len(texts) > 5 * len(lines)
    assert [text for q, text in texts if cut_words(contexts[q], text)] == []


# -- the model's own windows (issue 23, finding 4) ------------------------------------------------


@pytest.mark.slow
def test_saved_model_answers_with_its_fine_tuning_windows_without_flags(finetuned, tmp_path):
    out = finetuned[0]
    # Exported from the trainer's own checkpoint directory, the vocabulary found in its final/.
    run_module("albert.export", ["--checkpoint_path", str(out / "ckpt"), "--head", "qa",
                                 "--output_dir", str(tmp_path / "serving" / "1")])
    card = json.loads((tmp_path / "serving" / "1" / "assets" / "albert_task.json").read_text())
    assert card["task"] == "squad" and card["vocabulary_sha256"]
    assert {k: card["features"][k] for k in ("max_seq_length", "doc_stride",
                                             "max_query_length")} == {
        "max_seq_length": 160, "doc_stride": 64, "max_query_length": 24}
    assert card["features"]["squad_version"] == "v2.0"
    # No window flags: the model's own (run_squad's defaults, 384/128/64, would answer otherwise
    # and exceed this model's 512 positions only by luck).
    _, stdout, stderr = run_module("albert.answer", [
        "--checkpoint_path", str(tmp_path / "serving" / "1"), "--input",
        str(out / "questions.jsonl"), "--batch_size", "16", "--null_score_diff_threshold", "1e9"])
    check_same_as_run_squad([json.loads(line) for line in stdout.splitlines()], finetuned)
    assert "windows as fine-tuned: --max_seq_length 160 --doc_stride 64" in stderr
    # The Hugging Face export (final/) and the checkpoint directory carry them too.
    for model in (out / "ckpt" / "final", out / "ckpt"):
        question = finetuned[3][0]
        _, one, _ = run_module("albert.answer", ["--checkpoint_path", str(model), "--question",
                                                 question["question"], "--context",
                                                 question["context"],
                                                 "--null_score_diff_threshold", "1e9"])
        assert f"answer: {finetuned[1][question['id']]}\n" in one
    # A window flag that disagrees is refused; an inference knob is not.
    code, _, err = run_module("albert.answer", [
        "--checkpoint_path", str(tmp_path / "serving" / "1"), "--question", "who?", "--context",
        "it is mira.", "--doc_stride", "48"], check=False)
    assert code == 2 and "Traceback" not in err
    assert (f"--doc_stride 48 differs from the 64 that --checkpoint_path "
            f"{tmp_path / 'serving' / '1'} was fine-tuned with: drop --doc_stride") in err


def test_a_vocabulary_other_than_the_fine_tuning_one_is_refused(tmp_path):
    import argparse

    from albert.answer import apply_task_card
    from albert.cli.flags import FlagError
    from albert.io.task_card import write_task_card
    from albert.train.run_spec import file_sha256

    model = tmp_path / "model"
    model.mkdir()
    (tmp_path / "a.model").write_bytes(b"one vocabulary")
    (tmp_path / "b.model").write_bytes(b"another vocabulary")
    write_task_card(str(model), {"task": "squad", "features": {"max_seq_length": 128},
                                 "labels": None,
                                 "vocabulary_sha256": file_sha256(str(tmp_path / "a.model"))})
    args = argparse.Namespace(checkpoint_path=str(model), max_seq_length=None, doc_stride=None,
                              max_query_length=None, squad_version=None,
                              spm_model=str(tmp_path / "a.model"))
    assert apply_task_card(args) == str(tmp_path / "a.model")
    assert (args.max_seq_length, args.doc_stride, args.squad_version) == (128, 128, "squadv2")
    args.spm_model = str(tmp_path / "b.model")
    with pytest.raises(FlagError, match="is not the one --checkpoint_path .* was fine-tuned with"):
        apply_task_card(args)


@pytest.mark.slow
def test_run_squad_predicts_with_the_windows_it_was_fine_tuned_with(squad_fine_tune, tmp_path):
    # Issue 23, finding 4 on run_squad's own prediction-only path: no window flags needed.
    out = squad_fine_tune.dir
    base = ["--predict_file", squad_fine_tune.dev, "--load_from", "checkpoint",
            "--checkpoint_path", str(out / "ckpt"), "--null_score_diff_threshold", "1e9",
            "--eval_batch_size", "16", "--output_dir", str(tmp_path / "pred"), "--skip_xla",
            "--no_progress"]
    run_module("albert.run_squad", base)
    # The same answers as the fixture's prediction-only run, which gave the windows as flags.
    assert (json.loads((tmp_path / "pred" / "predictions.json").read_text())
            == squad_fine_tune.answered)
    code, _, err = run_module("albert.run_squad", base + ["--max_seq_length", "128"],
                              check=False)
    assert code == 2 and "Traceback" not in err
    assert (f"--max_seq_length 128 differs from the 160 that --checkpoint_path {out / 'ckpt'} "
            "was fine-tuned with") in err


# -- issue 34 item 12: the input file, and the card read first ------------------------------------


def qa_model_dir(path, sample_vocab, card):
    """A model directory as far as answer reads it before loading: its card and vocabulary."""
    import shutil

    from albert.io.task_card import write_task_card

    path.mkdir()
    shutil.copyfile(sample_vocab, path / "spiece.model")
    write_task_card(str(path), card)
    return str(path)


def fake_qa_model(monkeypatch):
    """albert.cli.serving_model.load_qa_model (what answer's run loads) replaced by logits that
    pick each window's first context token."""
    import numpy as np

    from albert.cli import serving_model
    from albert.model.config import AlbertConfig

    def load(path):
        def logits_fn(input_ids, attention_mask, token_type_ids):
            start = np.where(np.asarray(token_type_ids) == 1, 0.0, -50.0)
            return start, start.copy()

        return logits_fn, AlbertConfig.from_preset("tiny", vocab_size=2000), None

    monkeypatch.setattr(serving_model, "load_qa_model", load)


SQUAD_CARD = {"task": "squad", "features": {"max_seq_length": 64, "doc_stride": 32,
                                            "max_query_length": 16, "squad_version": "v1.1"},
              "labels": None, "vocabulary_sha256": None}


def test_a_jsonl_input_with_a_byte_order_mark_is_read(sample_vocab, tmp_path, capsys, monkeypatch):
    """What classify accepts, answer accepts: a JSON-lines file an editor saved with a BOM."""
    from albert import answer

    fake_qa_model(monkeypatch)
    model = qa_model_dir(tmp_path / "m", sample_vocab, SQUAD_CARD)
    line = json.dumps({"id": "q1", "question": "who owns it?", "context": "mira owns it."})
    (tmp_path / "q.jsonl").write_text("\ufeff" + line + "\n", encoding="utf-8")
    assert answer.main(["--checkpoint_path", model, "--input", str(tmp_path / "q.jsonl"),
                        "--no_progress"]) == 0
    (row,) = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert row["id"] == "q1" and row["answer"]


def test_a_directory_given_as_input_is_refused_as_a_directory(sample_vocab, tmp_path, capsys):
    from albert import answer

    model = qa_model_dir(tmp_path / "m", sample_vocab, SQUAD_CARD)
    assert answer.main(["--checkpoint_path", model, "--input", str(tmp_path)]) == 2
    assert capsys.readouterr().err == (f"error: --input {tmp_path} is a directory: give a "
                                       "JSON-lines file\n")


@pytest.mark.parametrize("card, message", [
    ({"task": "classification", "features": {"max_seq_length": 32}, "labels": ["a", "b"]},
     "--checkpoint_path {model} was fine-tuned for classification, not question answering"),
    ({"task": "squad", "features": ["max_seq_length", 64]},
     '--checkpoint_path {model}: {model}/albert_task.json (of the model {model}): "features" '
     "must be a JSON object of feature settings, got a list"),
    ({"task": "squad", "features": {"max_seq_length": "64"}},
     '"features" "max_seq_length" must be a positive whole number, got the string "64"'),
])
def test_a_wrong_task_or_malformed_card_is_refused_before_the_model_loads(card, message,
                                                                          sample_vocab, tmp_path,
                                                                          capsys, monkeypatch):
    """A classifier's export, or a card of the wrong shape: one line, exit 2, before
    TensorFlow loads the model (15 s, where classify answers in 1 s)."""
    from albert import answer
    from albert.cli import serving_model

    def loaded(path):
        raise AssertionError("the model was loaded")

    monkeypatch.setattr(serving_model, "load_qa_model", loaded)
    model = qa_model_dir(tmp_path / "m", sample_vocab, card)
    assert answer.main(["--checkpoint_path", model, "--question", "who?", "--context",
                        "mira."]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and len(err.splitlines()) == 1
    assert message.format(model=model) in err
