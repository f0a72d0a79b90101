"""albert.data.output_dir: --output_dir replaced as a whole, refused when it would lose data."""

import os
import socket

import pytest

from albert.data import output_dir
from albert.errors import SettingError


def test_a_non_empty_directory_needs_overwrite(tmp_path):
    out = str(tmp_path / "data")
    output_dir.check_output_dir(out, False, [])  # missing: fine
    os.mkdir(out)
    output_dir.check_output_dir(out, False, [])  # empty: fine
    for name in "abcde":
        open(os.path.join(out, name), "w").close()
    with pytest.raises(SettingError, match=r"^output_dir .* is not empty \(a, b, c, d, \.\.\.\); "
                                           r"pass overwrite") as refused:
        output_dir.check_output_dir(out, False, [])
    assert refused.value.setting == "output_dir"
    assert refused.value.on_command_line().startswith(f"--output_dir {out} is not empty")
    assert "pass --overwrite to replace it" in refused.value.on_command_line()
    output_dir.check_output_dir(out, True, [])


def test_an_input_inside_or_a_file_is_refused(tmp_path):
    out = str(tmp_path / "data")
    with pytest.raises(SettingError, match="holds the input"):
        output_dir.check_output_dir(out, True, [os.path.join(out, "corpus.txt")])
    output_dir.check_output_dir(out, True, [str(tmp_path / "data2" / "corpus.txt")])
    (tmp_path / "data").write_text("a file")
    with pytest.raises(SettingError, match="exists and is not a directory"):
        output_dir.check_output_dir(out, True, [])


def test_work_dir_replaces_the_output_on_commit(tmp_path):
    out = str(tmp_path / "data")
    os.mkdir(out)
    (tmp_path / "data" / "old.tfrecord").write_text("old")
    work = output_dir.make_work_dir(out)
    assert os.path.basename(work).startswith(".data.partial-") and os.path.isdir(work)
    open(os.path.join(work, "new.tfrecord"), "w").close()
    output_dir.commit(work, out)
    assert os.listdir(out) == ["new.tfrecord"]
    assert sorted(os.listdir(tmp_path)) == ["data"]  # neither the work nor the old one is left


def test_only_dead_runs_temporaries_are_removed(tmp_path):
    out = str(tmp_path / "data")
    host = socket.gethostname()
    dead = tmp_path / f".data.partial-{host}-999999999"  # above any pid_max: no such process
    alive = tmp_path / f".data.old-{host}-1"  # pid 1 runs
    other_host = tmp_path / f".data.partial-{host}x-999999999"
    for d in (dead, alive, other_host):
        d.mkdir()
    output_dir.remove_stale_temporaries(out)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([alive.name, other_host.name])


def test_a_run_killed_between_its_two_renames_gets_the_previous_output_back(tmp_path):
    """Without an atomic exchange the commit is two renames; killed between them, the run left
    --output_dir missing, the previous output moved aside and its own beside it. The next run
    puts the previous output back instead of deleting both."""
    out = str(tmp_path / "data")
    host = socket.gethostname()
    old = tmp_path / f".data.old-{host}-999999999"
    new = tmp_path / f".data.partial-{host}-999999999"
    for d in (old, new):
        d.mkdir()
    (old / "part-00000.tfrecord").write_text("previous")
    output_dir.remove_stale_temporaries(out)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data"]
    assert (tmp_path / "data" / "part-00000.tfrecord").read_text() == "previous"
    # With the output in place, a dead run's moved-aside copy is only removed.
    old.mkdir()
    output_dir.remove_stale_temporaries(out)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data"]
    assert (tmp_path / "data" / "part-00000.tfrecord").read_text() == "previous"


def test_no_space_message_names_the_file():
    import errno

    e = OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), "/data/part-0.tfrecord")
    assert output_dir.no_space_message(e).startswith(
        "no space left on device writing /data/part-0.tfrecord: free some space")
