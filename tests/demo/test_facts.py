"""The demo's paraphrase question set and the fact language it shares with the pretraining text."""

import collections
import json
import re
import subprocess
import sys

import pytest

from albert.data import squad
from albert.demo import facts
from albert.demo.sample import write_corpus

PROJECT = re.compile(rf"[Tt]he (?:{'|'.join(facts.NAMES)}) (?:{'|'.join(facts.KINDS)})")
PERSON = re.compile(rf"(?:{'|'.join(facts.FIRST)}) (?:{'|'.join(facts.LAST)})")


def held_out_phrases():
    return {p for r in facts.RELATIONS
            for p in vars(r.wordings[facts.HELD_OUT]).values()}


def uses(text, phrases):
    return any(re.search(r"\b" + re.escape(p) + r"\b", text) for p in phrases)


def parse_question(text):
    """(project, relation, wording) such that facts.question gives back `text` exactly."""
    project = PROJECT.search(text).group(0)
    found = [(project, r, i) for r in facts.RELATIONS for i in range(len(r.wordings))
             for form in facts.QUESTION_FORMS if facts.question(project, r, i, form) == text]
    assert len(found) == 1, text
    return found[0]


def fact_sentences(context, project):
    """The sentences of `context` that state something about `project`."""
    return [s for s in re.split(r"(?<=[.:;!?])\s+", context)
            if PERSON.search(s) and project.lower() in s.lower()]


def states(sentence, relation):
    return uses(sentence, {p for w in relation.wordings for p in vars(w).values()})


@pytest.fixture(scope="module")
def paraphrase_set(tmp_path_factory):
    out = tmp_path_factory.mktemp("paraphrase")
    cmd = [sys.executable, "-m", "albert.demo.squad_sample", "--output_dir", str(out),
           "--style", "paraphrase", "--train_questions", "600", "--dev_questions", "200"]
    subprocess.run(cmd, check=True, capture_output=True)
    load = lambda name: json.loads((out / f"{name}-v2.0.json").read_text())  # noqa: E731
    first = load("train"), load("dev")
    subprocess.run(cmd, check=True, capture_output=True)
    assert (load("train"), load("dev")) == first, "the question set must be deterministic"
    return out, first


def items(data):
    for p in data["data"][0]["paragraphs"]:
        assert len(p["qas"]) == 1
        yield p["context"], p["qas"][0]


@pytest.mark.e2e
def test_paraphrase_set_is_squad_v2_with_exact_answer_spans(paraphrase_set, sample_vocab):
    from albert.data.tokenization import load_tokenizer

    out, splits = paraphrase_set
    for name, data in zip(("train", "dev"), splits, strict=True):
        assert data["version"] == "v2.0"
        impossible = 0
        for context, qa in items(data):
            if qa["is_impossible"]:
                assert qa["answers"] == []
                impossible += 1
                continue
            (answer,) = qa["answers"]
            start, text = answer["answer_start"], answer["text"]
            assert context[start:start + len(text)] == text and context.count(text) == 1
            assert PERSON.fullmatch(text)
        assert 0.25 < impossible / len(data["data"][0]["paragraphs"]) < 0.42, name
        examples, _, stats = squad.read_squad(str(out / f"{name}-v2.0.json"))
        assert stats.mismatched_answers == 0
        features = squad.featurize(examples, load_tokenizer(sample_vocab),
                                   squad.FeatureSettings(192, 64, 32), True)
        assert squad.answer_recovery_rate(examples, features) >= 0.99


@pytest.mark.e2e
def test_fine_tuning_never_sees_the_held_out_wording_and_dev_always_asks_across_it(
        paraphrase_set):
    _, (train, dev) = paraphrase_set
    held = held_out_phrases()
    for context, qa in items(train):
        assert not uses(qa["question"], held) and not uses(context, held), qa["id"]
    sides = collections.Counter()
    for context, qa in items(dev):
        said = [s for s in re.split(r"(?<=[.:;!?])\s+", context) if PERSON.search(s)]
        asked_held = uses(qa["question"], held)
        # Either the question is in the held-out wording and every fact in the passage in a
        # fine-tuned one, or the other way round: no fact can be ruled out by its wording alone.
        assert all(uses(s, held) != asked_held for s in said), (qa["question"], said)
        sides[asked_held, qa["is_impossible"]] += 1
    assert min(sides.values()) > 20 and len(sides) == 4, sides


@pytest.mark.e2e
def test_answers_need_the_relation_and_unanswerables_lack_only_the_asked_fact(paraphrase_set):
    _, (train, dev) = paraphrase_set
    for context, qa in [*items(train), *items(dev)]:
        project, relation, _ = parse_question(qa["question"])
        about = fact_sentences(context, project)
        asked = [s for s in about if states(s, relation)]
        other = [s for s in about if not states(s, relation)]
        # A fact about the same project in another relation, with another person: matching the
        # project alone cannot find the answer.
        assert other and all(PERSON.search(s).group(0) != (qa["answers"] or [{}])[0].get("text")
                             for s in other)
        if qa["is_impossible"]:
            assert asked == [], (qa["question"], asked)
        else:
            assert len(asked) == 1 and qa["answers"][0]["text"] in asked[0]


def test_registry_says_every_fact_twice_in_two_wordings_and_uses_every_wording(tmp_path):
    # Its documents open with a line naming the project, then state each fact twice, the
    # restatement right after the fact.
    documents = facts.registry_documents(300, seed=0)
    text = " ".join(s for d in documents for s in d)
    for relation in facts.RELATIONS:
        for wording in relation.wordings:
            assert uses(text, {wording.noun}) and uses(text, {wording.verb}), wording
    for document in documents:
        by_person = {}
        for sentence in document[1:]:
            (person,) = PERSON.findall(sentence)
            by_person.setdefault(person, []).append(sentence)
        for said in by_person.values():
            assert len(said) == 2
            assert said[1].startswith("In other words, ")
            assert document.index(said[1]) == document.index(said[0]) + 1, document
            wordings = [next(i for r in facts.RELATIONS for i, w in enumerate(r.wordings)
                             if uses(s, set(vars(w).values()))) for s in said]
            assert wordings[0] != wordings[1], said
    # The demo's pretraining text: the help topics, then the registry.
    pydoc, both = tmp_path / "pydoc.txt", tmp_path / "both.txt"
    write_corpus(str(pydoc), "pydoc")
    write_corpus(str(both), "pydoc+facts")
    assert both.read_text().startswith(pydoc.read_text())
    assert uses(both.read_text(), held_out_phrases())
