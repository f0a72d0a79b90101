"""What a run reports (albert.train.run_logging): one line per log step with its values, the same
values in the JSON-lines file and as TensorBoard scalars, nothing from a rank other than 0."""

import json
import math

from albert.train.distributed import Distributed
from albert.train.run_logging import MetricsLogger


class _SecondRank(Distributed):
    rank, size = 1, 2


def test_one_line_per_log_step_and_the_same_values_in_the_jsonl(tmp_path, capsys):
    logs = tmp_path / "logs"
    logger = MetricsLogger(str(logs), Distributed())
    logger.log("train", 5, {"loss": 2.345678, "lr": 0.000125, "tokens": 40960, "note": "x"})
    logger.log("eval", 10, {"loss": 1.5, "seq_per_sec": 123456.78})
    logger.close()
    assert capsys.readouterr().out.splitlines() == [
        "train step 5 loss 2.346 lr 0.000125 tokens 40960 note x",
        "eval step 10 loss 1.5 seq_per_sec 123456.8"]
    records = [json.loads(line) for line in (logs / "metrics.jsonl").read_text().splitlines()]
    assert [(r["split"], r["step"]) for r in records] == [("train", 5), ("eval", 10)]
    assert records[0]["loss"] == 2.345678 and records[0]["tokens"] == 40960  # full precision
    assert records[1]["seq_per_sec"] == 123456.78 and records[1]["time"] > 0


def test_a_second_run_in_the_same_log_dir_appends(tmp_path, capsys):
    for step in (1, 2):
        logger = MetricsLogger(str(tmp_path), Distributed())
        logger.log("train", step, {"loss": 1.0})
        logger.close()
    steps = [json.loads(line)["step"]
             for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert steps == [1, 2]


def test_tensorboard_gets_the_finite_numbers_only(tmp_path, capsys):
    import tensorflow as tf

    logger = MetricsLogger(str(tmp_path), Distributed())
    logger.log("train", 3, {"loss": 0.5, "grad_norm": math.nan, "tokens": 7, "note": "x"})
    logger.close()
    events = [p for p in tmp_path.iterdir() if p.name.startswith("events.")]
    assert len(events) == 1
    tags = {}
    for record in tf.compat.v1.train.summary_iterator(str(events[0])):
        for value in record.summary.value:
            tags[value.tag] = (record.step, float(tf.make_ndarray(value.tensor)))
    assert tags == {"train/loss": (3, 0.5), "train/tokens": (3, 7.0)}
    # The JSON line keeps the NaN the run met.
    assert math.isnan(json.loads((tmp_path / "metrics.jsonl").read_text())["grad_norm"])


def test_other_ranks_write_and_print_nothing(tmp_path, capsys):
    logger = MetricsLogger(str(tmp_path / "logs"), _SecondRank())
    logger.log("train", 1, {"loss": 1.0})
    logger.close()
    assert capsys.readouterr().out == "" and not (tmp_path / "logs").exists()


def test_without_a_log_dir_rank_0_still_prints(capsys):
    logger = MetricsLogger(None, Distributed())
    logger.log("train", 1, {"loss": 1.0})
    logger.close()
    assert capsys.readouterr().out == "train step 1 loss 1\n"
