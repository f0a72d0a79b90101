"""SQuAD preprocessing: alignment, windows, labels, caching, errors."""

import json
import os
import re
import subprocess
import sys

import numpy as np
import pytest
from helpers import run_in_process

from albert.data import squad, squad_records
from albert.data.tokenization import load_tokenizer
from albert.demo.squad_sample import write_sample


@pytest.fixture(scope="module")
def tokenizer(sample_vocab):
    return load_tokenizer(sample_vocab)


def write(tmp_path, paragraphs, version="v2.0"):
    path = tmp_path / "data.json"
    path.write_text(json.dumps({"version": version, "data": [{"title": "t",
                                                             "paragraphs": paragraphs}]}))
    return str(path)


def test_bundled_set_answers_recoverable(tokenizer, tmp_path):
    train, _ = write_sample(str(tmp_path), train_questions=400, dev_questions=10)
    examples, _, stats = squad.read_squad(train)
    features = squad.featurize(examples, tokenizer, squad.FeatureSettings(192, 64, 32), True)
    rate = squad.answer_recovery_rate(examples, features)
    print(f"answer recovery rate on the bundled set: {rate:.4f}")
    assert rate >= 0.99
    assert stats.mismatched_answers == 0


def test_unicode_and_whitespace_alignment(tokenizer, tmp_path):
    context = "Der  Müller\u00a0sagte: «Café\tcrème» kostet 3,50 €.\nEnde   des Satzes."
    answers = [("Café\tcrème", context.index("Café")), ("3,50 €", context.index("3,50"))]
    qas = [{"id": f"q{i}", "question": "was?", "is_impossible": False,
            "answers": [{"text": t, "answer_start": s}]} for i, (t, s) in enumerate(answers)]
    examples, _, _ = squad.read_squad(write(tmp_path, [{"context": context, "qas": qas}]))
    features = squad.featurize(examples, tokenizer, squad.FeatureSettings(64, 32, 16), True)
    for f in features:
        text = context[f.token_spans[f.start_position][0]:f.token_spans[f.end_position][1]]
        assert text == examples[f.example_index].answers[0][0]


def test_long_context_gives_several_windows_with_max_context(tokenizer, tmp_path):
    context = " ".join(f"Sentence number {i} talks about the interpreter." for i in range(60))
    target = "Sentence number 42"
    qas = [{"id": "q", "question": "which?", "is_impossible": False,
            "answers": [{"text": target, "answer_start": context.index(target)}]}]
    examples, _, _ = squad.read_squad(write(tmp_path, [{"context": context, "qas": qas}]))
    settings = squad.FeatureSettings(max_seq_length=64, doc_stride=20, max_query_length=8)
    features = squad.featurize(examples, tokenizer, settings, True)
    assert len(features) > 5
    labelled = [f for f in features if f.start_position > 0]
    assert labelled and len(labelled) < len(features)  # other windows point at [CLS]
    # Every context token is "max context" in exactly one window (counted by token position:
    # a lone "▁" piece shares its character span with the next piece).
    n_context = len(tokenizer(context, add_special_tokens=False)["input_ids"])
    n_question = len(tokenizer("which?", add_special_tokens=False)["input_ids"])
    windows = list(squad._windows(n_context, 64 - n_question - 3, 20))
    assert len(windows) == len(features)
    counts = [0] * n_context
    for (w_start, w_len), f in zip(windows, features, strict=True):
        prefix = n_question + 2
        for k in range(w_len):
            counts[w_start + k] += f.max_context[prefix + k]
    assert set(counts) == {1}
    for f in features:
        assert len(f.input_ids) == 64 and f.input_ids[0] == tokenizer.cls_token_id


def test_impossible_questions_point_at_cls(tokenizer, tmp_path):
    qas = [{"id": "q", "question": "who?", "is_impossible": True, "answers": []}]
    examples, _, stats = squad.read_squad(write(tmp_path, [{"context": "Nothing here.",
                                                            "qas": qas}]))
    assert stats.impossible == 1
    (feature,) = squad.featurize(examples, tokenizer, squad.FeatureSettings(32, 16, 8), True)
    assert feature.start_position == feature.end_position == 0


def test_mismatched_answers_are_counted_not_silently_dropped(tmp_path):
    context = "The owner is mira castell and the port is 8080."
    qas = [
        {"id": "ok", "question": "?", "answers": [{"text": "mira castell",
                                                   "answer_start": 13}]},
        {"id": "off", "question": "?", "answers": [{"text": "8080", "answer_start": 3}]},
        {"id": "bad", "question": "?", "answers": [{"text": "not there", "answer_start": 0}]},
    ]
    examples, _, stats = squad.read_squad(write(tmp_path, [{"context": context, "qas": qas}],
                                                version="1.1"))
    assert stats.realigned_answers == 1 and stats.mismatched_answers == 1
    assert examples[1].answers == [("8080", context.index("8080"))]
    assert examples[2].answers == []  # still a question to predict and score


@pytest.mark.parametrize(
    "content, message",
    [
        ("{broken", "is not valid JSON"),
        ('{"data": 3}', "not in the SQuAD layout"),
        ('{"data": [{"paragraphs": [{"qas": []}]}]}', "needs a 'context' string"),
        ('{"data": [{"paragraphs": [{"context": "c", "qas": [{"question": "q"}]}]}]}',
         "qas\\[0\\] needs 'id'"),
    ],
)
def test_malformed_files(content, message, tmp_path):
    path = tmp_path / "bad.json"
    path.write_text(content)
    with pytest.raises(squad.SquadError, match=message):
        squad.read_squad(str(path))


def test_missing_file(tmp_path):
    with pytest.raises(FileNotFoundError, match="SQuAD file not found"):
        squad.read_squad(str(tmp_path / "nope.json"))


def test_cache_round_trip_and_key(tokenizer, sample_vocab, tmp_path):
    train, _ = write_sample(str(tmp_path), train_questions=20, dev_questions=5)
    examples, _, _ = squad.read_squad(train)
    settings = squad.FeatureSettings(128, 64, 32)
    features = squad.featurize(examples, tokenizer, settings, True)
    key = squad.cache_key(train, settings, sample_vocab, True)
    assert key != squad.cache_key(train, squad.FeatureSettings(256, 64, 32), sample_vocab, True)
    prefix = str(tmp_path / f"cache.{key}")
    squad_records.write_feature_cache(features, prefix)
    records, parse = squad_records.feature_dataset(prefix, 128)
    batch = parse(next(iter(records.batch(len(features)))))
    assert batch["input_ids"].shape == (len(features), 128)
    assert list(batch["start_positions"].numpy()) == [f.start_position for f in features]
    assert len(squad.read_feature_meta(prefix)) == len(features)
    assert not [p for p in os.listdir(tmp_path) if p.endswith(".tmp")]


def test_postprocess_picks_best_valid_span_and_null(tokenizer, tmp_path):
    import numpy as np

    context = "The owner of the zorvan module is mira castell."
    qas = [{"id": "q", "question": "Who owns zorvan?", "is_impossible": False,
            "answers": [{"text": "mira castell", "answer_start": context.index("mira")}]}]
    examples, _, _ = squad.read_squad(write(tmp_path, [{"context": context, "qas": qas}]))
    (f,) = squad.featurize(examples, tokenizer, squad.FeatureSettings(48, 16, 16), False)
    meta = [{"example_index": 0, "token_spans": f.token_spans, "max_context": f.max_context}]
    start = np.full(48, -5.0)
    end = np.full(48, -5.0)
    a, b = squad._char_span_to_tokens(
        [s if s else (0, 0) for s in f.token_spans], context.index("mira"), len(context) - 1)
    start[a], end[b] = 4.0, 4.0
    start[0] = end[0] = 1.0  # null score 2 < span score 8
    preds, nbest, odds = squad.postprocess(examples, meta, {0: (start, end)}, version_2=True)
    assert preds["q"] == "mira castell"
    assert odds["q"] == pytest.approx(2.0 - 8.0)
    assert nbest["q"][0]["text"] == "mira castell"
    assert sum(c["probability"] for c in nbest["q"]) == pytest.approx(1.0)
    start[0] = end[0] = 10.0  # now "no answer" wins
    preds, _, odds = squad.postprocess(examples, meta, {0: (start, end)}, version_2=True)
    assert preds["q"] == "" and odds["q"] == pytest.approx(12.0)


# -- hostile input (issue 13) -----------------------------------------------------------------


def run_squad_cli(argv, timeout=180):
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"}
    return subprocess.run([sys.executable, "-m", "albert.run_squad", *argv],
                          capture_output=True, text=True, timeout=timeout, env=env)


def error_lines(stderr):
    return [line for line in stderr.splitlines() if line.startswith("error: ")]


@pytest.mark.parametrize(
    "settings, message",
    [
        ((384, 0, 64), "^doc_stride must be at least 1, got 0"),
        ((384, -3, 64), "^doc_stride must be at least 1, got -3"),
        ((384, 128, 0), "^max_query_length must be at least 1, got 0"),
        ((0, 128, 64), "^max_seq_length must be at least 1, got 0"),
        ((64, 16, 64), r"^max_seq_length 64 leaves no room for context after a "
                       r"max_query_length 64 question: .* >= max_query_length \+ 4 \(68\)"),
    ],
)
def test_doc_stride_and_length_relations_are_checked(settings, message):
    """Item 10, in the library: settings that loop forever or leave no context are refused."""
    with pytest.raises(squad.SettingsError, match=message) as refused:
        squad.FeatureSettings(*settings)
    # As the library spells them; the command line (answer, run_squad) names the flags.
    assert "--" not in str(refused.value)
    assert refused.value.on_command_line().startswith(f"--{refused.value.setting} ")
    squad.FeatureSettings(68, 500, 64)  # one context token per window; a long stride is fine


def test_doc_stride_above_the_room_skips_no_token(tokenizer, tmp_path):
    """Item 10: a stride larger than a window's context room makes back-to-back windows."""
    context = " ".join(f"Sentence number {i} talks about the interpreter." for i in range(20))
    qas = [{"id": "q", "question": "which?", "answers": []}]
    examples, _, _ = squad.read_squad(write(tmp_path, [{"context": context, "qas": qas}]))
    features = squad.featurize(examples, tokenizer, squad.FeatureSettings(32, 1000, 8), False)
    spans = [s for f in features for s in f.token_spans if s is not None]
    n_context = len(tokenizer(context, add_special_tokens=False)["input_ids"])
    assert len(spans) == n_context  # each context token in exactly one window


def _run_squad_argv(train, vocab, tmp_path, *flags):
    return ["--train_file", train, "--spm_model", vocab, "--model_size", "tiny", *flags,
            "--output_dir", str(tmp_path / "out"), "--cache_dir", str(tmp_path / "cache"),
            "--log_dir", str(tmp_path / "logs"), "--checkpoint_dir", str(tmp_path / "ckpt")]


@pytest.mark.e2e
def test_run_squad_doc_stride_zero_exits_2_without_hanging(sample_vocab, tmp_path):
    """Item 10 through the CLI: `--doc_stride 0` used to loop forever allocating memory. A
    process, under a timeout: the loop that never ended would hang this one."""
    train, _ = write_sample(str(tmp_path), train_questions=10, dev_questions=10)
    proc = run_squad_cli(_run_squad_argv(train, sample_vocab, tmp_path, "--doc_stride", "0",
                                         "--max_seq_length", "96"), timeout=120)
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert error_lines(proc.stderr) == ["error: --doc_stride must be at least 1, got 0"]
    assert "Traceback" not in proc.stderr


def test_run_squad_max_seq_length_without_room_for_context_is_refused(sample_vocab, tmp_path):
    """Item 10: a --max_seq_length without room for context is refused up front too."""
    train, _ = write_sample(str(tmp_path), train_questions=10, dev_questions=10)
    code, _, err = run_in_process("run_squad", _run_squad_argv(train, sample_vocab, tmp_path,
                                                               "--max_seq_length", "64"))
    assert code == 2, err[-2000:]
    assert error_lines(err) == [
        "error: --max_seq_length 64 leaves no room for context after a --max_query_length 64 "
        "question: [CLS] question [SEP] context [SEP] needs --max_seq_length >= "
        "--max_query_length + 4 (68)"]
    assert "Traceback" not in err


@pytest.mark.parametrize(
    "qa, message",
    [
        ({"id": "q7", "question": None, "answers": []},
         r"qas\[0\] \(id 'q7'\): 'question' must be a string, got NoneType None"),
        ({"id": "q8", "question": "who?", "answers": [{"text": 42, "answer_start": 0}]},
         r"qas\[0\] \(id 'q8'\): answers\[0\] needs a 'text' string, got int 42"),
        ({"id": "q9", "question": "who?", "answers": [{"answer_start": 0}]},
         r"qas\[0\] \(id 'q9'\): answers\[0\] needs a 'text' string, got NoneType"),
        ({"id": "q10", "question": "who?", "answers": "mira"},
         r"qas\[0\] \(id 'q10'\): 'answers' must be a list, got str"),
        ({"id": ["x"], "question": "who?"}, r"qas\[0\]: 'id' must be a string"),
    ],
)
def test_wrongly_typed_fields_name_file_and_question(qa, message, tmp_path):
    """Item 12 (data), in the library: a SquadError naming the file, entry and question id."""
    path = write(tmp_path, [{"context": "mira castell owns it.", "qas": [qa]}])
    with pytest.raises(squad.SquadError, match=re.escape(path) + r": data\[0\]\.paragraphs"
                                               r"\[0\]\." + message):
        squad.read_squad(path)


def test_run_squad_null_question_is_one_line_error(sample_vocab, tmp_path):
    """Item 12 (data) through the CLI: `question: null` in the training file -> exit 2, one
    line naming the file and the question id (was a TypeError traceback in the tokenizer)."""
    qas = [{"id": "good", "question": "who?", "answers": [{"text": "mira", "answer_start": 0}]},
           {"id": "q-null", "question": None, "answers": []}]
    path = write(tmp_path, [{"context": "mira castell owns it.", "qas": qas}])
    code, _, err = run_in_process("run_squad", [
        "--train_file", path, "--spm_model", sample_vocab, "--model_size", "tiny",
        "--max_seq_length", "96", "--output_dir", str(tmp_path / "out"), "--cache_dir",
        str(tmp_path / "cache"), "--log_dir", str(tmp_path / "logs"), "--checkpoint_dir",
        str(tmp_path / "ckpt"), "--no_progress"])
    assert code == 2, err[-2000:]
    assert error_lines(err) == [
        f"error: {path}: data[0].paragraphs[0].qas[1] (id 'q-null'): 'question' must be a "
        "string, got NoneType None"]
    assert "Traceback" not in err


# -- answers read as whole words (issue 25) ---------------------------------------------------

TEXT = "The owner is sofia novak, then pavel  novak.\nIn name \"Ellipsis\" (1999) Smith's"
END = "The owner is sofia novak"  # a word at each end of the context
UNICODE = "Der  Müller\u00a0sagte: «Café\tcrème» kostet 3,50 €. Cafe\u0301 東京に"


@pytest.mark.parametrize("context, fragment, nth, expected", [
    (TEXT, "sofia nova", 0, "sofia novak"),  # ends mid-word; the comma stays out
    (TEXT, "ovak", 0, "novak"),  # starts mid-word
    (TEXT, "a nov", 0, "sofia novak"),  # both
    (TEXT, "novak,", 0, "novak,"),  # a predicted comma stays
    (TEXT, "ovak", 1, "novak"),  # the second novak: the period stays out
    (TEXT, "ovak.", 0, "novak."),
    (TEXT, "Ell", 0, "Ellipsis"),  # the opening quote was not predicted
    (TEXT, "\"Ell", 0, "\"Ellipsis"),
    (TEXT, "psis\" (19", 0, "Ellipsis\" (1999"),
    (TEXT, "Smi", 0, "Smith"),  # the reference's own example: Smith's -> Smith
    (TEXT, "vel  no", 0, "pavel  novak"),  # inner whitespace as written
    (TEXT, "  nov", 0, "novak"),  # no whitespace at the ends
    (TEXT, "k.\nI", 0, "novak.\nIn"),
    (UNICODE, "Mül", 0, "Müller"),  # the no-break space ends the word
    (UNICODE, "Caf", 0, "Café"),
    (UNICODE, "é\tcr", 0, "Café\tcrème"),
    (UNICODE, "3,5", 0, "3,50"),
    (UNICODE, "Caf", 1, "Cafe\u0301"),  # a combining accent belongs to its letter
    (UNICODE, "東", 0, "東"),  # CJK ideographs are words of their own
    (UNICODE, "京に", 0, "京に"),
    # Issue 34 item 15: the context's first and last words are completed too.
    (END, "nova", 0, "novak"),
    (END, "a nov", 0, "sofia novak"),
    (END, "k", 0, "novak"),
    (END, "e own", 0, "The owner"),
])
def test_whole_word_span(context, fragment, nth, expected):
    start = -1
    for _ in range(nth + 1):
        start = context.index(fragment, start + 1)
    a, b = squad.whole_word_span(context, start, start + len(fragment))
    assert context[a:b] == expected
    assert context.index(expected, a) == a  # positions, not just the text


def test_whole_word_span_of_only_whitespace_is_empty():
    a, b = squad.whole_word_span(TEXT, TEXT.index("  "), TEXT.index("  ") + 2)
    assert a == b


def _tokens_of(features, context, word):
    """Token positions of `word`'s pieces (the first occurrence), asserting that the vocabulary
    splits it into several."""
    start = context.index(word)
    spans = features.token_spans
    tokens = [t for t, s in enumerate(spans) if s and start <= s[0] < start + len(word)]
    assert len(tokens) > 1, f"{word!r} is one piece in this vocabulary; pick a rarer word"
    return tokens


def test_postprocess_answers_whole_words(tokenizer, tmp_path):
    import numpy as np

    context = "The owner is sofia  novak,\nnot pavel. Tomé’s café."
    qas = [{"id": "q", "question": "Who owns it?", "is_impossible": False,
            "answers": [{"text": "sofia  novak", "answer_start": context.index("sofia")}]}]
    examples, _, _ = squad.read_squad(write(tmp_path, [{"context": context, "qas": qas}]))
    (f,) = squad.featurize(examples, tokenizer, squad.FeatureSettings(64, 16, 16), False)
    meta = [{"example_index": 0, "token_spans": f.token_spans, "max_context": f.max_context}]
    sofia, novak = _tokens_of(f, context, "sofia"), _tokens_of(f, context, "novak")
    tome = _tokens_of(f, context, "Tomé")

    def answers(start_at, end_at, null=-50.0):
        start, end = np.full(64, -20.0), np.full(64, -20.0)
        start[0] = end[0] = null / 2
        start[start_at], end[end_at] = 10.0, 10.0
        return squad.postprocess(examples, meta, {0: (start, end)}, version_2=True)

    cases = [((sofia[0], novak[-2]), "sofia  novak"),  # ends inside novak
             ((sofia[1], novak[-1]), "sofia  novak"),  # starts inside sofia
             ((novak[1], novak[1]), "novak"),  # one piece inside the word, not the comma
             ((tome[1], tome[-1]), "Tomé")]  # accented original text, ’s left out
    for (s, e), expected in cases:
        raw = context[f.token_spans[s][0]:f.token_spans[e][1]]
        assert raw != expected  # the pieces alone cut the word
        preds, nbest, odds = answers(s, e)
        assert preds["q"] == expected, (raw, preds["q"])
        assert nbest["q"][0] == {"text": expected, "score": 20.0,
                                 "probability": nbest["q"][0]["probability"]}
        assert odds["q"] == pytest.approx(-50.0 - 20.0)  # scores are the pieces' logits
    # Spans that read as the same words are one n-best entry, at the best of their scores.
    _, nbest, _ = answers(novak[0], novak[-1])
    texts = [c["text"] for c in nbest["q"]]
    assert len(texts) == len(set(texts)) and texts[0] == "novak"
    assert nbest["q"][0]["score"] == 20.0
    assert sum(c["probability"] for c in nbest["q"]) == pytest.approx(1.0)
    # The null answer still wins on its score alone.
    preds, _, odds = answers(sofia[0], novak[-2], null=30.0)
    assert preds["q"] == "" and odds["q"] == pytest.approx(10.0)


# -- scripts written without spaces keep the predicted characters (issue 34 item 4) -----------

# Contexts cut into the pieces a multilingual SentencePiece vocabulary makes (the answer's pieces,
# then the particle or the next word as pieces of their own, with no space between them), and what
# a span of the first piece alone reads as.
NO_SPACES = [
    (["กรุงเทพ", "มหานคร", "เป็น", "เมืองหลวง", "ของ", "ประเทศไทย"], "กรุงเทพมหานคร", "กรุงเทพ"),
    (["東京", "タワー", "は", "東京", "に", "ある"], "東京タワー", "東京"),
    (["パイ", "ソン", "は", "プログラミング", "言語", "です"], "パイソン", "パイ"),
    (["서울", "은", " 한국", "의", " 수도", "이다"], "서울", "서울"),
    # A Latin word inside Japanese still reads as a whole word, and stops at the kana.
    (["Py", "thon", "は", "言語", "です"], "Python", "Python"),
]


@pytest.mark.parametrize("pieces, gold, first_piece", NO_SPACES,
                         ids=["th", "ja", "ja-katakana", "ko", "ja-latin"])
def test_exact_span_in_a_script_without_spaces_comes_back_unchanged(pieces, gold, first_piece):
    context = "".join(pieces)
    assert context.startswith(gold)
    assert context[slice(*squad.whole_word_span(context, 0, len(gold)))] == gold
    # A span inside the answer grows only in a script that puts spaces between words.
    assert context[slice(*squad.whole_word_span(context, 0, len(pieces[0])))] == first_piece


@pytest.mark.parametrize("pieces, gold, first_piece", NO_SPACES,
                         ids=["th", "ja", "ja-katakana", "ko", "ja-latin"])
def test_postprocess_keeps_an_exact_answer_in_a_script_without_spaces(pieces, gold, first_piece):
    """Issue 34 item 4: logits that pick exactly the gold pieces give the gold answer, not the
    sentence ('กรุงเทพมหานคร', not the whole Thai sentence; '서울', not '서울은')."""
    context = "".join(pieces)
    spans, offset = [None, None, None], 0  # [CLS] question [SEP]
    for piece in pieces:
        spans.append((offset, offset + len(piece)))
        offset += len(piece)
    spans.append(None)  # [SEP]
    gold_pieces = [3 + i for i, (_, b) in enumerate(spans[3:-1]) if b <= len(gold)]
    assert context[spans[gold_pieces[0]][0]:spans[gold_pieces[-1]][1]] == gold
    example = squad.Example("q", "?", context, [(gold, 0)], False)
    meta = [{"example_index": 0, "token_spans": spans, "max_context": [True] * len(spans)}]
    start, end = np.full(len(spans), -10.0), np.full(len(spans), -10.0)
    start[gold_pieces[0]], end[gold_pieces[-1]] = 5.0, 5.0
    preds, nbest, _ = squad.postprocess([example], meta, {0: (start, end)})
    assert preds["q"] == gold and nbest["q"][0]["text"] == gold
