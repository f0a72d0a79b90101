"""A small language of facts about software projects, said in many ways, for the demo.

Five relations (who maintains, wrote, reviews, funds, leads a project), each with three synonymous
wordings ("the maintainer of X" / "the keeper of X" / "the custodian of X", "Y maintains X" / "Y
looks after X" / "Y takes care of X", ...), stated in four sentence forms (copula, active, passive,
passive after a preposed clause) and asked in two ("Who is the keeper of X?", "Who looks after
X?"): a question rarely repeats its answer sentence's words or their order.

Two consumers:
- `registry_documents`: unlabelled text (one document per project, each fact said twice in
  different wordings), added to the demo's pretraining corpus. It holds no questions.
- `albert.demo.squad_sample --style paraphrase`: a SQuAD v2.0 question set whose fine-tuning split
  never uses the third wording of any relation and whose dev split always does, on one side of
  the question/passage pair. Only the pretraining text shows that "custodian" and "maintainer" mean
  one thing: a model trained on the labelled questions alone has never seen the third wording.
  (The demo's tiny model does not learn it from the pretraining text either in its budget; the
  figures in docs/demo.md say what it does learn.)
"""

from __future__ import annotations

import random
from dataclasses import dataclass

NAMES = ["zorvan", "quillet", "marbo", "tessel", "ovrin", "calder", "brisk", "halvard",
         "pellin", "ursa", "norrik", "vesper", "dunmore", "fennick", "grisel", "ambrose",
         "corvid", "lintel", "mosswick", "pardo", "rennet", "solace", "tamber", "wexley"]
KINDS = ["module", "service", "library", "daemon", "compiler", "toolkit"]
FIRST = ["Mira", "Tomas", "Ines", "Kofi", "Lena", "Arjun", "Sofia", "Pavel", "Nadia", "Oscar",
         "Hana", "Diego", "Priya", "Emil", "Zara", "Jonas"]
LAST = ["Castell", "Brandt", "Okafor", "Lindqvist", "Moreau", "Tanaka", "Silva", "Novak",
        "Haddad", "Kowalski", "Reyes", "Dubois"]


@dataclass(frozen=True)
class Wording:
    noun: str         # the maintainer (of X)
    verb: str         # (Y) maintains (X)
    participle: str   # (X is) maintained (by Y)


@dataclass(frozen=True)
class Relation:
    name: str
    past: bool        # wrote / was written: the facts are said in the past tense
    wordings: tuple[Wording, ...]


RELATIONS = (
    Relation("maintain", False, (Wording("maintainer", "maintains", "maintained"),
                                 Wording("keeper", "looks after", "looked after"),
                                 Wording("custodian", "takes care of", "taken care of"))),
    Relation("write", True, (Wording("author", "wrote", "written"),
                             Wording("creator", "created", "created"),
                             Wording("originator", "devised", "devised"))),
    Relation("review", False, (Wording("reviewer", "reviews", "reviewed"),
                               Wording("inspector", "inspects", "inspected"),
                               Wording("auditor", "audits", "audited"))),
    Relation("fund", False, (Wording("sponsor", "sponsors", "sponsored"),
                             Wording("funder", "funds", "funded"),
                             Wording("backer", "bankrolls", "bankrolled"))),
    Relation("lead", False, (Wording("lead", "leads", "led"),
                             Wording("head", "heads", "headed"),
                             Wording("director", "directs", "directed"))),
)
# The wording the question set's fine-tuning split never uses and its dev split always does.
HELD_OUT = 2
STATEMENT_FORMS = ("copula", "active", "passive", "preposed")
QUESTION_FORMS = ("copula", "active")


@dataclass(frozen=True)
class Fact:
    project: str      # "the zorvan module"
    relation: Relation
    person: str       # "Mira Castell"


def random_project(rng: random.Random) -> str:
    return f"the {rng.choice(NAMES)} {rng.choice(KINDS)}"


def random_person(rng: random.Random) -> str:
    return f"{rng.choice(FIRST)} {rng.choice(LAST)}"


def random_fact(rng: random.Random, project: str | None = None,
                relation: Relation | None = None) -> Fact:
    return Fact(project or random_project(rng), relation or rng.choice(RELATIONS),
                random_person(rng))


def _capital(text: str) -> str:
    return text[0].upper() + text[1:]


def statement(fact: Fact, wording: int, form: str, rng: random.Random) -> str:
    """One sentence stating `fact`; the person's name appears in it exactly once."""
    w = fact.relation.wordings[wording]
    be = "was" if fact.relation.past else "is"
    x, y = fact.project, fact.person
    if form == "copula":
        return f"The {w.noun} of {x} {be} {y}."
    if form == "active":
        return f"{y} {w.verb} {x}."
    if form == "passive":
        return f"{_capital(x)} {be} {w.participle} by {y}."
    if form == "preposed":
        when = rng.choice(["According to the project records", "As the release notes say",
                           "For the current release"])
        return f"{when}, {x} {be} {w.participle} by {y}."
    raise ValueError(f"unknown statement form {form!r}")


def question(project: str, relation: Relation, wording: int, form: str) -> str:
    w = relation.wordings[wording]
    be = "was" if relation.past else "is"
    if form == "copula":
        return f"Who {be} the {w.noun} of {project}?"
    if form == "active":
        return f"Who {w.verb} {project}?"
    raise ValueError(f"unknown question form {form!r}")


def registry_documents(n_documents: int = 1500, seed: int = 0) -> list[list[str]]:
    """Unlabelled text in this language: one document per project, an opening line, then its
    facts (two or three relations, a person each), each followed at once by the same fact in
    another wording after "In other words," (random forms). A restatement right beside what it
    restates is the text from which a small model learns, within the demo's budget, that
    "custodian" and "maintainer" mean one thing: predicting a masked "takes care of" needs the
    "maintainer" one sentence before. (Restated after all the facts, in another order, the pair
    was often split across the 64-token windows, and 1,000 updates learned no synonym.)
    Every wording appears; the facts are random draws, not the question set's."""
    rng = random.Random(seed)
    documents = []
    for _ in range(n_documents):
        project = random_project(rng)
        people = set()
        sentences = [f"{_capital(project)} is one of the projects in this registry."]
        for relation in rng.sample(RELATIONS, rng.randint(2, 3)):
            fact = random_fact(rng, project, relation)
            while fact.person in people:  # one person per fact: each name marks its fact
                fact = random_fact(rng, project, relation)
            people.add(fact.person)
            first, again = rng.sample(range(len(relation.wordings)), 2)
            sentences.append(statement(fact, first, rng.choice(STATEMENT_FORMS), rng))
            restated = statement(fact, again, rng.choice(STATEMENT_FORMS), rng)
            if not restated.startswith(fact.person):
                restated = restated[0].lower() + restated[1:]
            sentences.append(f"In other words, {restated}")
        documents.append(sentences)
    return documents
