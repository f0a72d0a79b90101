"""albert.data.workers: the generator's work in this process (--processes 1; worker processes
are tests/test_create_pretraining_data.py's, end to end), and how a worker's error is told."""

import errno
import os

from albert.data.chunks import GeneratorSettings
from albert.data.pretraining import InstanceOptions
from albert.data.progress import InputProgress
from albert.data.report import Totals
from albert.data.workers import _describe, generate
from albert.errors import DataError

DOC = " ".join(f"Statement {i} tells the interpreter what to do next." for i in range(12))


def test_in_process_generation_writes_every_record_once(sample_vocab, tmp_path):
    files = []
    for name, n in (("a.txt", 5), ("b.txt", 3)):
        (tmp_path / name).write_text("\n".join(DOC.replace("Statement", f"{name}{j}")
                                               for j in range(n)) + "\n")
        files.append(str(tmp_path / name))
    settings = GeneratorSettings(sample_vocab, InstanceOptions(32, 5), "line", "text", 2, 1, 1,
                                 0.0, (3, 1))
    work = tmp_path / "work"
    work.mkdir()
    totals = Totals()
    progress = InputProgress(files, "instances", enabled=False)
    records = generate(settings, files, str(work), 1, 0, False, 1 << 20, totals, progress)
    assert records["validation"] == [] and len(records["train"]) == 3
    assert totals.stats.documents == 8 and totals.chunks == 3 + 2  # 2 documents a chunk
    assert sorted(os.listdir(work / "train")) == [f"part-0000{j}-of-00003.tfrecord"
                                                  for j in range(3)]
    assert os.listdir(work / ".buckets") == []  # every bucket written and removed
    assert sum(records["train"]) > 8


def test_a_users_error_is_one_line_and_a_bug_keeps_its_traceback():
    assert _describe(DataError("bad shard")) == ("input", "bad shard")
    kind, message = _describe(OSError(errno.ENOSPC, "No space left on device", "/d/x"))
    assert kind == "input" and message.startswith("no space left on device writing /d/x")
    try:
        raise ValueError("a bug")
    except ValueError as e:
        kind, message = _describe(e)
    assert kind == "bug" and "Traceback" in message and "ValueError: a bug" in message
