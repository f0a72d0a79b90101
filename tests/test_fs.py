"""albert.fs, the one atomic directory replace that the toolkit's own directories (final/, best/),
the SavedModel export and the data generator's output directory share: a write that fails midway
leaves the old directory whole where it was, and nothing of the attempt beside it. And the write
of files into somebody's directory (save_pretrained): each file replaced whole, the rest left."""

import os
import subprocess
import sys

import pytest

from albert import fs


def tree(directory) -> dict:
    """{relative path: content} of every file under `directory`."""
    out = {}
    for root, _, files in os.walk(directory):
        for name in files:
            path = os.path.join(root, name)
            with open(path, encoding="utf-8") as f:
                out[os.path.relpath(path, directory)] = f.read()
    return out


def write(directory, files: dict) -> None:
    for name, text in files.items():
        path = os.path.join(directory, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)


OLD = {"config.json": "old", "weights/a.bin": "old a"}
NEW = {"config.json": "new", "weights/b.bin": "new b"}


@pytest.fixture(params=["exchange", "two renames"])
def how(request, monkeypatch):
    """Each test under both ways of replacing: the atomic exchange and, where a file system has
    none, the two renames."""
    if request.param == "two renames":
        monkeypatch.setattr(fs, "exchange", lambda a, b: False)
    return request.param


def test_exchange_swaps_two_directories_where_the_file_system_can(tmp_path):
    write(tmp_path / "a", OLD)
    write(tmp_path / "b", NEW)
    if not fs.exchange(str(tmp_path / "a"), str(tmp_path / "b")):
        pytest.skip("this platform or file system has no RENAME_EXCHANGE")
    assert tree(tmp_path / "a") == NEW and tree(tmp_path / "b") == OLD


def test_a_write_that_fails_midway_leaves_the_old_directory_and_no_temporary(tmp_path, how):
    target = tmp_path / "model"
    write(target, OLD)
    with pytest.raises(RuntimeError, match="disk on fire"):
        with fs.staged_directory(str(target)) as staged:
            write(staged, {"config.json": "half"})
            raise RuntimeError("disk on fire")
    assert tree(target) == OLD
    assert os.listdir(tmp_path) == ["model"]


def test_a_complete_write_replaces_the_directory_whole(tmp_path, how):
    target = tmp_path / "model"
    write(target, OLD)
    with fs.staged_directory(str(target)) as staged:
        write(staged, NEW)
    assert tree(target) == NEW  # weights/a.bin is gone: replaced, not merged
    assert os.listdir(tmp_path) == ["model"]
    with fs.staged_directory(str(tmp_path / "new" / "model")) as staged:
        write(staged, NEW)
    assert tree(tmp_path / "new" / "model") == NEW


def test_a_failed_second_rename_puts_the_old_directory_back(tmp_path, monkeypatch):
    """Without an exchange, the old directory is moved aside first; when moving the new one in
    then fails (a full or read-only file system, an interrupt), the target is not left missing."""
    monkeypatch.setattr(fs, "exchange", lambda a, b: False)
    target, new = tmp_path / "out", tmp_path / ".out.partial"
    write(target, OLD)
    write(new, NEW)
    rename = os.rename

    def failing(src, dst):
        if os.fspath(src) == str(new):
            raise OSError(28, "No space left on device", dst)
        rename(src, dst)

    monkeypatch.setattr(os, "rename", failing)
    with pytest.raises(OSError, match="No space"):
        fs.replace_directory(str(new), str(target), aside=str(tmp_path / ".out.old"))
    assert tree(target) == OLD
    assert tree(new) == NEW  # the caller's to remove (staged_directory and commit do)
    assert sorted(os.listdir(tmp_path)) == [".out.partial", "out"]


def test_new_directory_takes_the_umask_not_0700(tmp_path):
    """A SavedModel or final/ made 0700 could not be read by a model server or a teammate."""
    previous = os.umask(0o022)
    try:
        path = fs.new_directory(str(tmp_path), ".tmp-")
    finally:
        os.umask(previous)
    assert os.path.basename(path).startswith(".tmp-")
    assert os.stat(path).st_mode & 0o777 == 0o755


def test_save_pretrained_that_fails_midway_keeps_the_checkpoint(tmp_path, monkeypatch):
    """The Hugging Face writer raising after its first file: the export before is intact."""
    from albert.io import pretrained

    target = tmp_path / "final"
    write(target, OLD)

    def half(model, directory, **_):
        write(directory, {"config.json": "half"})
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(pretrained, "write_huggingface", half)
    with pytest.raises(OSError):
        pretrained.save_pretrained(object(), str(target))
    assert tree(target) == OLD
    assert os.listdir(tmp_path) == ["final"]


def test_the_data_generators_commit_goes_through_it(tmp_path, how):
    from albert.data import output_dir

    out = str(tmp_path / "data")
    write(out, OLD)
    work = output_dir.make_work_dir(out)
    write(work, NEW)
    output_dir.commit(work, out)
    assert tree(out) == NEW
    assert os.listdir(tmp_path) == ["data"]


@pytest.mark.e2e
def test_the_data_generator_still_imports_no_tensorflow_or_numpy():
    code = ("import sys, albert.fs, albert.data.output_dir; "
            "print(sorted(m for m in ('tensorflow', 'numpy') if m in sys.modules))")
    env = {**os.environ, "PYTHONPATH": os.path.join(os.path.dirname(__file__), "..", "models")}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         check=True).stdout
    assert out.strip() == "[]"


# -- issue 34 item 6: a symbolic link, a mount point ----------------------------------------------


def test_a_symlinked_target_is_written_where_it_points(tmp_path, how):
    """serving/1 -> elsewhere/1: the link stays a link and what it points to becomes the new
    directory; no temporary (directory or link) is left beside either."""
    write(tmp_path / "elsewhere" / "1", OLD)
    (tmp_path / "serving").mkdir()
    link = tmp_path / "serving" / "1"
    link.symlink_to(tmp_path / "elsewhere" / "1", target_is_directory=True)
    with fs.staged_directory(str(link)) as staged:
        write(staged, NEW)
    assert link.is_symlink() and os.readlink(link) == str(tmp_path / "elsewhere" / "1")
    assert tree(tmp_path / "elsewhere" / "1") == NEW
    assert os.listdir(tmp_path / "serving") == ["1"]
    assert os.listdir(tmp_path / "elsewhere") == ["1"]


def test_replace_directory_refuses_a_link_it_would_replace(tmp_path):
    write(tmp_path / "real", OLD)
    write(tmp_path / "new", NEW)
    (tmp_path / "link").symlink_to(tmp_path / "real", target_is_directory=True)
    with pytest.raises(fs.OutputError) as refused:
        fs.replace_directory(str(tmp_path / "new"), str(tmp_path / "link"))
    assert str(refused.value) == (f"{tmp_path / 'link'} is a symbolic link (to "
                                  f"{tmp_path / 'real'}): give the directory it points to")
    assert (tmp_path / "link").is_symlink() and tree(tmp_path / "real") == OLD


def test_a_target_no_rename_can_move_is_one_output_error_and_stays_whole(tmp_path, how,
                                                                         monkeypatch):
    """A mount point (EBUSY from the exchange or the rename): an OutputError naming it and the
    way on; the old directory stays whole and nothing of the attempt is left beside it."""
    target = tmp_path / "model"
    write(target, OLD)
    rename = os.rename

    def busy(src, dst):
        if os.fspath(src) == str(target) or os.fspath(dst) == str(target):
            raise OSError(16, "Device or resource busy", os.fspath(dst))
        rename(src, dst)

    monkeypatch.setattr(os, "rename", busy)
    if how == "exchange":
        def exchange(a, b):
            raise OSError(16, "Device or resource busy", b)

        monkeypatch.setattr(fs, "exchange", exchange)
    with pytest.raises(fs.OutputError) as refused:
        with fs.staged_directory(str(target)) as staged:
            write(staged, NEW)
    assert str(refused.value) == (f"cannot replace {target}: it is in use or a mount point "
                                  "(EBUSY), which a rename cannot move; give a directory inside "
                                  f"it, e.g. {target / '1'}")
    assert tree(target) == OLD
    assert os.listdir(tmp_path) == ["model"]


def test_staged_files_replace_each_file_and_leave_the_others(tmp_path):
    """Issue 50 item 3: the write into a directory somebody else owns (save_pretrained): each
    new file takes its namesake's place, `remove` goes, every other file stays; a write that
    fails leaves every file as it was, and a directory it made is gone again."""
    target = tmp_path / "project"
    write(target, {"README.md": "mine", "config.json": "old", "stale.json": "old",
                   "src/train.py": "mine"})
    with fs.staged_files(str(target), last=("config.json",), remove=("stale.json",)) as staged:
        write(staged, {"config.json": "new", "model.bin": "new"})
    assert tree(target) == {"README.md": "mine", "config.json": "new", "model.bin": "new",
                            "src/train.py": "mine"}
    with pytest.raises(RuntimeError, match="disk on fire"):
        with fs.staged_files(str(target), remove=("README.md",)) as staged:
            write(staged, {"config.json": "half"})
            raise RuntimeError("disk on fire")
    assert tree(target) == {"README.md": "mine", "config.json": "new", "model.bin": "new",
                            "src/train.py": "mine"}
    with pytest.raises(RuntimeError, match="disk on fire"):
        with fs.staged_files(str(tmp_path / "new")) as staged:
            raise RuntimeError("disk on fire")
    assert sorted(os.listdir(tmp_path)) == ["project"]
