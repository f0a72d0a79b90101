"""albert.data.progress: where a reader is in its input, and the bar over the inputs' bytes."""

import os

import pytest

from albert.data.progress import ReadPosition


@pytest.mark.skipif(not os.path.isdir("/proc/self/fdinfo"), reason="Linux's /proc tells")
def test_read_position_is_the_offset_of_the_open_file(tmp_path):
    path = tmp_path / "input.txt"
    path.write_bytes(b"x" * 100_000)
    assert ReadPosition(str(path))() is None  # not open in this process
    with open(path, "rb", buffering=0) as f:
        f.read(12_345)
        position = ReadPosition(str(tmp_path / "." / "input.txt"))
        assert position() == 12_345
        f.read(20_000)
        assert position() == 32_345
    assert position() is None


def test_bar_total_is_the_inputs_bytes_and_reads_never_go_back(tmp_path):
    from albert.data.progress import InputProgress

    files = []
    for name, size in (("a.txt", 1000), ("b.txt", 2345)):
        (tmp_path / name).write_bytes(b"y" * size)
        files.append(str(tmp_path / name))
    progress = InputProgress(files, "instances")
    try:
        assert progress.bar.total == 3345 == sum(os.path.getsize(f) for f in files)
        progress.read(0, 400)
        progress.read(0, 300)  # an older reading: the bar does not move back
        progress.read(0, None)  # position unknown: nothing
        assert progress.bar.n == 400
        progress.read(1, 10_000)  # past the end (the file grew): capped at its size
        assert progress.bar.n == 400 + 2345
        progress.done(0)
        assert progress.bar.n == progress.bar.total
        progress.counted(7)
        assert "7 instances (" in progress.bar.postfix
    finally:
        progress.close()


def test_a_disabled_bar_asks_nothing_of_the_files(tmp_path):
    from albert.data.progress import InputProgress

    progress = InputProgress([str(tmp_path / "missing.txt")], "documents", enabled=False)
    assert progress.position(str(tmp_path / "missing.txt"))() is None
    progress.read(0, 5)
    progress.done(0)
    progress.counted(3)
    assert progress.bar.n == 0
    progress.close()
