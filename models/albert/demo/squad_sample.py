"""A SQuAD-format question set written over the bundled corpus, for the demo and tests.

    python -m albert.demo.squad_sample --output_dir squad/ --squad_version squadv2
    python -m albert.demo.squad_sample --output_dir squad/ --style paraphrase     # the demo's

--style facts: each context is a passage of CPython's help text with a fact planted in it ("The
owner of the zorvan module is mira castell."); each question asks for it in the same words ("What
is the owner of the zorvan module?"), answered by an extractive span. With --squad_version
squadv2 (the default) a third of the questions are unanswerable (their passage holds no fact).
--hard adds distractor facts.
--style paraphrase: albert.demo.facts' language ("Who looks after the zorvan module?" over "The
zorvan module is maintained by Mira Castell."), with a distractor fact about the same project in
every passage; the dev split asks in wordings the training split never uses (see that module).
Both are written in the official
layout (data -> paragraphs -> context, qas -> id, question, answers[text, answer_start],
is_impossible), so run_squad and squad_eval read it like the real files.
"""

from __future__ import annotations

import json
import os
import random
import sys

from albert.cli import flags
from albert.demo import facts
from albert.demo.sample import pydoc_documents
from albert.tasks.squad_options import VERSIONS

ENTITIES = ["zorvan", "quillet", "marbo", "tessel", "ovrin", "calder", "brisk", "halvard",
            "pellin", "ursa", "norrik", "vesper", "dunmore", "fennick", "grisel", "ambrose"]
KINDS = ["module", "service", "library", "daemon", "compiler", "toolkit"]
ATTRIBUTES = ["owner", "maintainer", "author", "reviewer", "sponsor"]
FIRST = ["mira", "tomas", "ines", "kofi", "lena", "arjun", "sofia", "pavel", "nadia", "oscar"]
LAST = ["castell", "brandt", "okafor", "lindqvist", "moreau", "tanaka", "silva", "novak"]


def _fact(rng):
    entity = f"the {rng.choice(ENTITIES)} {rng.choice(KINDS)}"
    attribute = rng.choice(ATTRIBUTES)
    value = f"{rng.choice(FIRST)} {rng.choice(LAST)}"
    return entity, attribute, value


def make_split(passages, n_questions: int, version: str, seed: int, prefix: str,
               hard: bool = False) -> dict:
    """hard=False: an answerable passage holds exactly the fact asked for and an unanswerable
    one holds none (a tiny model learns this in minutes on a CPU). hard=True: half the passages
    add a distractor fact and unanswerable questions ask about a fact that is not the planted one,
    so the model must match entity and attribute."""
    rng = random.Random(seed)
    paragraphs = []
    for q in range(n_questions):
        sentences = list(rng.choice(passages))
        impossible = version == "v2.0" and rng.random() < 1 / 3
        facts = [_fact(rng)]
        if hard and rng.random() < 0.5:
            other = _fact(rng)
            if other[:2] != facts[0][:2]:
                facts.append(other)
        planted = facts if (hard or not impossible) else []
        for entity, attribute, value in planted:
            sentences.insert(rng.randint(0, len(sentences)),
                             f"The {attribute} of {entity} is {value}.")
        context = " ".join(sentences)
        if impossible:
            entity, attribute, _ = _fact(rng)
            while any((entity, attribute) == f[:2] for f in facts):
                entity, attribute, _ = _fact(rng)
        else:
            entity, attribute, value = facts[0]
        qa = {"id": f"{prefix}-{q:05d}", "question": f"What is the {attribute} of {entity}?"}
        if impossible:
            qa["answers"] = []
        else:
            sentence = f"The {attribute} of {entity} is {value}."
            start = context.index(sentence) + sentence.index(value)
            qa["answers"] = [{"text": value, "answer_start": start}]
        if version == "v2.0":
            qa["is_impossible"] = impossible
        paragraphs.append({"context": context, "qas": [qa]})
    return {"version": version if version == "v2.0" else "1.1",
            "data": [{"title": "pydoc topics with planted facts", "paragraphs": paragraphs}]}


def make_paraphrase_split(passages, n_questions: int, version: str, seed: int, prefix: str,
                          held_out: bool) -> dict:
    """Questions in albert.demo.facts' language over short corpus passages. Each passage holds a
    fact about the asked project in another relation, sometimes the asked relation's fact about
    another project, and (unless unanswerable) the asked fact, each in a random sentence form. The
    answer is a person's name, and every fact's value is one. held_out
    =False (fine-tuning): every wording but facts.HELD_OUT. held_out=True (dev): either the
    question is in the held-out wording and every fact in the passage in fine-tuned ones, or the
    other way round; so a dev question is answered only by knowing that the held-out wording
    means what a fine-tuned one does."""
    rng = random.Random(seed)
    seen = [i for i in range(3) if i != facts.HELD_OUT]
    paragraphs = []
    for q in range(n_questions):
        sentences = list(rng.choice(passages))
        impossible = version == "v2.0" and rng.random() < 1 / 3
        relation = rng.choice(facts.RELATIONS)
        project = facts.random_project(rng)
        if held_out and rng.random() < 0.5:
            ask, say = facts.HELD_OUT, rng.choice(seen)
        elif held_out:
            ask, say = rng.choice(seen), facts.HELD_OUT
        else:
            ask, say = rng.choice(seen), rng.choice(seen)
        others = [r for r in facts.RELATIONS if r is not relation]
        planted = [facts.random_fact(rng, project, rng.choice(others))]
        if rng.random() < 0.3:
            other_project = facts.random_project(rng)
            while other_project == project:
                other_project = facts.random_project(rng)
            planted.append(facts.random_fact(rng, other_project, relation))
        # The distractors are said like the answer: were they in a fine-tuned wording while the
        # answer is not, a model could answer by ruling them out without knowing the word.
        statements = [facts.statement(f, say if say == facts.HELD_OUT else rng.choice(seen),
                                      rng.choice(facts.STATEMENT_FORMS), rng) for f in planted]
        answer = None
        if not impossible:
            taken = {f.person for f in planted}
            answer = facts.random_fact(rng, project, relation)
            while answer.person in taken:
                answer = facts.random_fact(rng, project, relation)
            answer_sentence = facts.statement(answer, say, rng.choice(facts.STATEMENT_FORMS), rng)
            statements.append(answer_sentence)
        for sentence in statements:
            sentences.insert(rng.randint(0, len(sentences)), sentence)
        context = " ".join(sentences)
        qa = {"id": f"{prefix}-{q:05d}",
              "question": facts.question(project, relation, ask,
                                         rng.choice(facts.QUESTION_FORMS))}
        if answer is None:
            qa["answers"] = []
        else:
            start = context.index(answer_sentence) + answer_sentence.index(answer.person)
            qa["answers"] = [{"text": answer.person, "answer_start": start}]
        if version == "v2.0":
            qa["is_impossible"] = impossible
        paragraphs.append({"context": context, "qas": [qa]})
    return {"version": version if version == "v2.0" else "1.1",
            "data": [{"title": "pydoc topics with project facts in varied wording",
                      "paragraphs": paragraphs}]}


def passages(sentences_per_passage=(3, 6)):
    """Consecutive runs of sentences from the corpus documents."""
    out = []
    rng = random.Random(0)
    for doc in pydoc_documents():
        i = 0
        while i < len(doc):
            n = rng.randint(*sentences_per_passage)
            chunk = [s for s in doc[i:i + n] if len(s) < 400]
            if chunk:
                out.append(chunk)
            i += n
    return out


def write_sample(output_dir: str, version: str = "v2.0", train_questions: int = 2000,
                 dev_questions: int = 300, seed: int = 1, hard: bool = False,
                 style: str = "facts") -> tuple[str, str]:
    os.makedirs(output_dir, exist_ok=True)
    # Paraphrase questions are hard enough for a tiny model: one or two sentences of help text
    # around the facts keep the fine-tuning within the demo's minutes.
    pool = passages((1, 2) if style == "paraphrase" else (3, 6))
    rng = random.Random(seed)
    rng.shuffle(pool)
    cut = int(len(pool) * 0.85)  # dev passages are never seen in training
    tag = "v2.0" if version == "v2.0" else "v1.1"
    paths = []
    for name, split, n, s in (("train", pool[:cut], train_questions, seed),
                              ("dev", pool[cut:], dev_questions, seed + 1)):
        path = os.path.join(output_dir, f"{name}-{tag}.json")
        with open(path, "w", encoding="utf-8") as f:
            if style == "paraphrase":
                data = make_paraphrase_split(split, n, version, s, name, held_out=name == "dev")
            else:
                data = make_split(split, n, version, s, name, hard)
            json.dump(data, f)
        paths.append(path)
    return paths[0], paths[1]


def build_parser() -> flags.Parser:
    p = flags.Parser(description=__doc__.split("\n\n")[0])
    p.add_argument("--output_dir", required=True)
    p.add_argument("--squad_version", action=flags.Renamed, old=("--version",),
                   old_values={v: k for k, v in VERSIONS.items()}, choices=tuple(VERSIONS),
                   default="squadv2",
                   help="squadv2: a third of the questions unanswerable (v1.1 and v2.0 are read "
                        "as squadv1 and squadv2)")
    p.add_argument("--train_questions", type=int, default=2000)
    p.add_argument("--dev_questions", type=int, default=300)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--hard", action="store_true",
                   help="distractor facts and unanswerable questions about absent facts")
    p.add_argument("--style", choices=("facts", "paraphrase"), default="facts",
                   help="facts: the question repeats the fact's wording; paraphrase: "
                        "albert.demo.facts' language, dev asks in wordings the training split "
                        "never uses")
    return p


def main(argv=None):
    p = build_parser()
    args = p.parse_args(argv)
    if args.hard and args.style == "paraphrase":
        p.error("--hard is for --style facts (paraphrase questions always have distractors)")
    train, dev = write_sample(args.output_dir, VERSIONS[args.squad_version], args.train_questions,
                              args.dev_questions, args.seed, args.hard, args.style)
    print(f"wrote {train} and {dev}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
