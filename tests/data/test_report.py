"""albert.data.report: create_pretraining_data's totals, summary.json and closing line."""

from albert.data.chunks import ChunkOutput
from albert.data.corpus import ReadStats
from albert.data.report import Totals, closing_line, no_instances_message, summary


def _totals(**stats):
    totals = Totals()
    totals.add(ChunkOutput({}, ReadStats(**stats), tokens=100, masked=15, swapped=2))
    return totals


def test_no_instances_says_why():
    assert "every line of the input (4 lines) was skipped as invalid UTF-8" in \
        no_instances_message(_totals(lines=4, bad_lines=4))
    assert no_instances_message(_totals(lines=3, empty_documents=2)) == \
        "no instances: the input has 0 documents (skipped: 2 empty_documents)"
    assert no_instances_message(_totals(lines=3, documents=2)) == \
        "no instances: the input has 2 documents and none was long enough for a sentence pair"


def test_summary_and_closing_line_agree_with_the_totals(tmp_path):
    totals = _totals(documents=3, redirects=1)
    totals.warn("something to know")
    records = {"train": [3, 2], "validation": [1]}
    s = summary(totals, records, ["in.txt"], str(tmp_path), 2.0, True, {"seed": 1})
    assert (s["instances"], s["train_instances"], s["validation_instances"]) == (6, 5, 1)
    assert s["train_files"] == [str(tmp_path / "train" / f"part-0000{j}-of-00002.tfrecord.gz")
                                for j in range(2)]
    assert s["swapped_fraction"] == 2 / 6 and s["instances_per_second"] == 3.0
    assert s["skipped"]["redirects"] == 1 and s["warnings"] == ["something to know"]
    assert closing_line(s, "out") == ("wrote 6 instances (3/s, 15 masked tokens) from 3 "
                                      "documents to out; skipped 1 redirects")
