"""albert.demo.squad_sample: the bundled SQuAD-format question set."""

import json

from albert.demo.squad_sample import write_sample


def test_answers_are_exact_spans_and_dev_passages_are_unseen(tmp_path):
    train, dev = write_sample(str(tmp_path), train_questions=60, dev_questions=20, seed=3)
    assert (train, dev) == (str(tmp_path / "train-v2.0.json"), str(tmp_path / "dev-v2.0.json"))
    contexts, counts, impossible = {}, {}, 0
    for name, path in (("train", train), ("dev", dev)):
        data = json.load(open(path))["data"]
        contexts[name] = {p["context"] for a in data for p in a["paragraphs"]}
        qas = [(p["context"], q) for a in data for p in a["paragraphs"] for q in p["qas"]]
        counts[name] = len(qas)
        for context, q in qas:
            impossible += bool(q.get("is_impossible"))
            for answer in q["answers"]:
                start = answer["answer_start"]
                assert context[start:start + len(answer["text"])] == answer["text"]
    assert counts == {"train": 60, "dev": 20}
    assert not contexts["train"] & contexts["dev"]
    assert impossible > 0  # v2.0 asks questions the passage cannot answer


def test_seeded(tmp_path):
    a = write_sample(str(tmp_path / "a"), train_questions=20, dev_questions=5, seed=4)
    b = write_sample(str(tmp_path / "b"), train_questions=20, dev_questions=5, seed=4)
    assert [open(p).read() for p in a] == [open(p).read() for p in b]


def test_a_smaller_training_set_is_the_first_questions_of_the_larger(tmp_path):
    """The demo's tenth of the labels is a subset, not other questions: the same seed draws the
    same questions first, and the dev split does not depend on the training split's size."""
    big = write_sample(str(tmp_path / "big"), train_questions=200, dev_questions=30,
                       style="paraphrase")
    small = write_sample(str(tmp_path / "small"), train_questions=20, dev_questions=30,
                         style="paraphrase")
    load = lambda path: json.load(open(path, encoding="utf-8"))  # noqa: E731
    paragraphs = [load(p)["data"][0]["paragraphs"] for p in (big[0], small[0])]
    assert paragraphs[0][:20] == paragraphs[1] and len(paragraphs[0]) == 200
    assert load(big[1]) == load(small[1])
