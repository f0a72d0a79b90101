"""Classification tasks written from the bundled corpus (CPython's help topics), for the demo
and the tests: no download needed.

    python -m albert.demo.classification_sample --output_dir topics/ --sample_task topic
    python -m albert.run_classifier --train_file topics/train.tsv --eval_file topics/dev.tsv \\
        --test_file topics/test.tsv ...

--sample_task topic: which help topic a sentence comes from (one text, one label per topic; GLUE
SST-2's layout: `sentence`, `label`). --sample_task same_topic: whether two sentences come from
the same topic (a pair; `sentence1`, `sentence2`, `label` same/different, half each; RTE's
layout). Each topic's sentences are split 70/15/15 into train/dev/test, so no sentence of dev or
test is seen in training. test.tsv is unlabelled, with an `index` column first, as GLUE's test
files (run_classifier's --test_file).
"""

from __future__ import annotations

import collections
import os
import random
import sys
from pydoc_data.topics import topics as help_topics

from albert.cli import flags
from albert.demo.sample import _document
from albert.errors import FlagError

# Four topics about different things (the debugger, format strings, dictionaries, comparisons),
# large enough for a few hundred sentences in all, and far from balanced (the largest is a third).
DEFAULT_TOPICS = ("compound", "specialnames", "debugger", "string-methods")
SPLITS = (("train", 0.70), ("dev", 0.15), ("test", 0.15))


def _is_prose(sentence: str) -> bool:
    """A sentence of words, not a table row, a lone ellipsis or a tab-holding code line."""
    words = [w for w in sentence.split() if w.strip(".,;:()\"'").isalpha()]
    return len(words) >= 4 and "\t" not in sentence and "+--" not in sentence \
        and "|" not in sentence


def topic_sentences(topics=DEFAULT_TOPICS) -> dict[str, list[str]]:
    """{topic: its sentences} from CPython's pydoc help topics, each sentence once."""
    unknown = [t for t in topics if t not in help_topics]
    if unknown:
        raise FlagError(f"unknown help topic(s) {', '.join(unknown)}; some that exist: "
                         f"{', '.join(sorted(help_topics)[:12])}, ...")
    found = {t: list(dict.fromkeys(s for s in _document(help_topics[t]) if _is_prose(s)))
             for t in topics}
    # A sentence in two topics has no one right label, and a repeated one would sit in two
    # splits: each sentence appears once.
    seen = collections.Counter(s for sentences in found.values() for s in sentences)
    out = {t: [s for s in sentences if seen[s] == 1] for t, sentences in found.items()}
    empty = [t for t, sentences in out.items() if len(sentences) < 10]
    if empty:
        raise FlagError(f"--topics: help topic(s) {', '.join(empty)} have fewer than 10 "
                        "sentences")
    return out


def split_topics(sentences: dict[str, list[str]], seed: int) -> dict[str, list[tuple[str, str]]]:
    """{split: [(sentence, topic)]}: each topic's sentences shuffled and cut 70/15/15, then each
    split shuffled."""
    rng = random.Random(seed)
    splits = {name: [] for name, _ in SPLITS}
    for topic in sorted(sentences):
        items = list(sentences[topic])
        rng.shuffle(items)
        start = 0
        for i, (name, share) in enumerate(SPLITS):
            end = len(items) if i == len(SPLITS) - 1 else start + round(share * len(items))
            splits[name] += [(s, topic) for s in items[start:end]]
            start = end
    for rows in splits.values():
        rng.shuffle(rows)
    return splits


def same_topic_pairs(rows: list[tuple[str, str]], n_pairs: int, seed: int):
    """[(sentence1, sentence2, "same"|"different")]: half from one topic, half from two."""
    rng = random.Random(seed)
    by_topic = collections.defaultdict(list)
    for sentence, topic in rows:
        by_topic[topic].append(sentence)
    topics = sorted(by_topic)
    pairs = []
    for i in range(n_pairs):
        if i % 2 == 0:
            topic = rng.choice([t for t in topics if len(by_topic[t]) > 1])
            a, b = rng.sample(by_topic[topic], 2)
            pairs.append((a, b, "same"))
        else:
            first, second = rng.sample(topics, 2)
            pairs.append((rng.choice(by_topic[first]), rng.choice(by_topic[second]), "different"))
    rng.shuffle(pairs)
    return pairs


def _write_tsv(path: str, header: list[str], rows) -> None:
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        f.write("\t".join(header) + "\n")
        for row in rows:
            f.write("\t".join(str(x) for x in row) + "\n")


def write_task(output_dir: str, task: str = "topic", topics=DEFAULT_TOPICS, seed: int = 0,
               pairs_per_sentence: int = 3) -> dict:
    """Write train.tsv, dev.tsv and test.tsv; returns {split: examples} and dev's majority-class
    share ("dev_majority", what always answering the commonest label scores)."""
    if task not in ("topic", "same_topic"):
        raise ValueError(f"task must be 'topic' or 'same_topic', got {task!r}")
    splits = split_topics(topic_sentences(topics), seed)
    os.makedirs(output_dir, exist_ok=True)
    counts = {}
    for name, rows in splits.items():
        path = os.path.join(output_dir, f"{name}.tsv")
        if task == "topic":
            labelled = [(s, t) for s, t in rows]
            header = ["sentence", "label"]
        else:
            labelled = same_topic_pairs(rows, pairs_per_sentence * len(rows), seed + len(name))
            header = ["sentence1", "sentence2", "label"]
        if name == "test":
            _write_tsv(path, ["index", *header[:-1]],
                       [(i, *row[:-1]) for i, row in enumerate(labelled)])
        else:
            _write_tsv(path, header, labelled)
        counts[name] = len(labelled)
        if name == "dev":
            commonest = collections.Counter(row[-1] for row in labelled).most_common(1)[0][1]
            counts["dev_majority"] = commonest / len(labelled)
    return counts


def build_parser() -> flags.Parser:
    p = flags.Parser(description=__doc__.split("\n\n")[0])
    p.add_argument("--output_dir", required=True)
    p.add_argument("--sample_task", action=flags.Renamed, old=("--task",),
                   choices=("topic", "same_topic"), default="topic",
                   help="topic: a sentence's help topic; same_topic: whether two sentences "
                        "share theirs (a pair of texts)")
    p.add_argument("--topics", default=",".join(DEFAULT_TOPICS),
                   help="comma-separated pydoc help topics (python -m pydoc topics lists them)")
    p.add_argument("--seed", type=int, default=0)
    return p


def main(argv=None) -> int:
    p = build_parser()
    args = p.parse_args(argv)
    topics = tuple(t.strip() for t in args.topics.split(",") if t.strip())
    if len(topics) < 2:
        p.error("--topics needs at least two topics")
    with flags.user_errors():  # an unknown topic, an --output_dir that cannot be written: one line
        counts = write_task(args.output_dir, args.sample_task, topics, args.seed)
    print(f"wrote {args.sample_task}: {counts['train']} train, {counts['dev']} dev, "
          f"{counts['test']} test examples to {args.output_dir}; majority-class dev accuracy "
          f"{counts['dev_majority']:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
