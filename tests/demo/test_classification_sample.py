"""albert.demo.classification_sample: the bundled topic and same-topic classification tasks."""

import json

import pytest

from albert.data import classification as data
from albert.data.classification import Columns, read_examples


@pytest.mark.e2e
def test_sample_topic_task(tmp_path):
    import subprocess
    import sys

    from albert.demo.classification_sample import DEFAULT_TOPICS

    proc = subprocess.run([sys.executable, "-m", "albert.demo.classification_sample",
                           "--output_dir", str(tmp_path / "topic"), "--seed", "1"],
                          capture_output=True, text=True, check=True)
    assert "majority-class dev accuracy" in proc.stdout
    columns = Columns("sentence")
    splits = {name: read_examples(str(tmp_path / "topic" / f"{name}.tsv"), columns,
                                  labelled=name != "test")
              for name in ("train", "dev", "test")}
    texts = {name: {e.text_a for e in examples} for name, examples in splits.items()}
    assert not texts["train"] & texts["dev"] and not texts["train"] & texts["test"]
    assert data.label_set(splits["train"]) == tuple(sorted(DEFAULT_TOPICS))
    assert len(splits["train"]) > 4 * len(splits["dev"]) > 0
    header = (tmp_path / "topic" / "test.tsv").read_text().splitlines()[0]
    assert header == "index\tsentence"  # GLUE's test layout, unlabelled
    bad = subprocess.run([sys.executable, "-m", "albert.demo.classification_sample",
                          "--output_dir", str(tmp_path / "x"), "--topics", "debugger,nope"],
                         capture_output=True, text=True)
    assert bad.returncode == 2 and "error: unknown help topic(s) nope" in bad.stderr


def test_sample_same_topic_pairs_are_balanced(tmp_path):
    from albert.demo.classification_sample import write_task

    counts = write_task(str(tmp_path), "same_topic", seed=2)
    dev = read_examples(str(tmp_path / "dev.tsv"), Columns("sentence1", "sentence2"))
    assert counts["dev"] == len(dev) and counts["dev_majority"] == 0.5
    assert {e.label for e in dev} == {"same", "different"}
    assert all(e.text_b for e in dev)
    assert json.dumps(counts)  # plain numbers
