"""python -m albert.check_records: good shards, damaged shards, wrong shapes, usage errors (its
main in this process: the exit status it returns and what it prints); as a user runs it (a real
process): no start-up lines unless --verbose; --stats against google-research's
create_pretraining_data."""

import re
import shutil

import pytest
from helpers import (
    PREDS,
    SEQ,
    as_a_user_runs,
    bad_lines,
    damage,
    run_in_process,
    start_up_noise,
    write_records,
)

from albert import check_records as tool
from albert.data.record_stats import MASKING, STATISTICS


def check_records(*argv):
    """(exit status, stdout, stderr) of `python -m albert.check_records argv`, run as its main in
    this process; an exception escaping main fails the test with its traceback."""
    return run_in_process("check_records", argv)


def test_check_records_names_exactly_the_damaged_shards(sample_records, tmp_path):
    """Item 8a: a truncated shard and a bit-flipped one are listed, with the record where the
    damage starts; the good ones are not; exit 1 with a summary line."""
    shutil.copytree(sample_records / "train", tmp_path / "train")
    files = sorted(str(p) for p in (tmp_path / "train").iterdir())
    code, out, err = check_records("train", "--filesystem_prefix", str(tmp_path), "--no_progress")
    assert code == 0, err
    assert out.splitlines()[-1].startswith("checked 4 files, ")
    assert "shapes --max_seq_length 64 --max_predictions_per_seq 10" in out
    assert out.rstrip().endswith("all good; 0 empty")

    damage(files)
    code, out, err = check_records(str(tmp_path / "train" / "*"), "--max_seq_length", str(SEQ),
                                   "--max_predictions_per_seq", str(PREDS), "--no_progress")
    assert code == 1, err
    lines = bad_lines(out)
    assert [line.split(":")[0] for line in lines] == [f"BAD {files[1]}", f"BAD {files[2]}"]
    assert "corrupt at record" in lines[0] and "truncated record" in lines[0]
    assert "corrupt at record" in lines[1] and "corrupted record" in lines[1]
    assert out.splitlines()[-1].endswith(
        "2 bad (2 corrupt, 0 wrong shape, 0 unreadable); 0 empty")
    assert "Traceback" not in err


def test_check_records_finds_wrong_shapes_gzip_and_empty(tmp_path):
    """Item 8a (shapes): without flags, shapes come from the first record and a shard of another
    generator run is named; GZIP shards are read; empty ones are reported but not bad."""
    write_records(tmp_path / "part-00000-of-00002.tfrecord.gz", 5, 64, 10, gzip=True)
    write_records(tmp_path / "part-00001-of-00002.tfrecord", 5, 64, 10)
    write_records(tmp_path / "part-00001-of-00004.tfrecord", 5, 128, 10)
    write_records(tmp_path / "part-00002-of-00002.tfrecord", 0, 64, 10)
    code, out, err = check_records(str(tmp_path), "--no_progress")
    assert code == 1, err
    assert bad_lines(out) == [
        f"BAD {tmp_path / 'part-00001-of-00004.tfrecord'}: wrong shape at record 0: feature "
        "'input_ids' has length 128, but --max_seq_length asks for 64"]
    assert f"EMPTY {tmp_path / 'part-00002-of-00002.tfrecord'}: no records" in out
    assert "checked 4 files, 10 good records" in out
    assert out.rstrip().endswith("1 bad (0 corrupt, 1 wrong shape, 0 unreadable); 1 empty")

    code, out, _ = check_records(str(tmp_path / "part-*-of-00002*"), "--no_progress")
    assert code == 0 and "checked 3 files, 10 good records" in out


def test_check_records_usage_errors(tmp_path):
    code, _, err = check_records(str(tmp_path / "nothing*"))
    assert code == 2
    assert "\nerror: no TFRecord files match" in "\n" + err
    assert "Traceback" not in err
    code, _, err = check_records(str(tmp_path), "--max_seq_length", "0")
    assert code == 2 and "--max_seq_length must be >= 1" in err


@pytest.mark.e2e
def test_check_records_is_quiet_unless_verbose(sample_records):
    """Issue 27: TensorFlow's start-up lines (printed twice here before) are not shown; with
    --verbose they are, as in every tool (albert.cli.quiet_start). Real processes: TensorFlow
    prints those lines as it starts, once per process, under the user's environment; and the
    exit status is the process's own."""
    quiet = as_a_user_runs("check_records", sample_records / "train", "--no_progress")
    assert quiet.returncode == 0, quiet.stderr
    assert start_up_noise(quiet.stderr) == []
    assert quiet.stdout.rstrip().endswith("all good; 0 empty")
    verbose = as_a_user_runs("check_records", sample_records / "train", "--no_progress",
                             "--verbose")
    assert verbose.returncode == 0, verbose.stderr
    assert start_up_noise(verbose.stderr), verbose.stderr
    assert verbose.stdout == quiet.stdout


_ROW = re.compile(r"^  (.+?) +(\d\.\d{4}) +(\d\.\d{4}) +±(\d\.\d{4})  (ok|DIFFERS)$")


@pytest.mark.slow
def test_check_records_stats_match_google_on_the_sample_records(sample_records, capsys):
    """Issue 33 item 1b: every statistic of the sample records (2,755 at seq 64) lies within 4
    standard errors of google-research's rules run on the same text: the masking rows against
    google's masking of the same sequences (paired, tolerances of 0.02 or less), the sequence rows
    against google's packing of the same corpus (loose here: 79 documents, 2 passes; the demo's
    records at 21k show where ours differs, a lone sentence split instead of joined to another
    document's text)."""
    rc = tool.main([str(sample_records / "train"), str(sample_records / "validation"), "--stats",
                    "--no_progress"])
    out = capsys.readouterr().out
    assert rc == 0, out
    rows = {m[1]: m for m in map(_ROW.match, out.splitlines()) if m}
    assert sorted(rows) == sorted(STATISTICS), out
    for name, row in rows.items():
        ours, google, tolerance = map(float, row.group(2, 3, 4))
        assert row[5] == "ok" and abs(ours - google) <= tolerance + 1e-4, row[0]
        if name in MASKING:
            assert tolerance <= 0.02, row[0]  # tight enough to fail
    assert "google's packing of " in out and "20 passes (ours: 2)" in out
    assert out.rstrip().endswith("0 of 12 statistics outside the tolerance")


def test_check_records_stats_needs_the_vocabulary(sample_records, tmp_path, capsys):
    """Without summary.json (which names the vocabulary) and without --spm_model, --stats says
    so in one line, before reading every file."""
    shutil.copytree(sample_records / "train", tmp_path / "train")
    with pytest.raises(SystemExit) as exit_:
        tool.main([str(tmp_path / "train"), "--stats", "--no_progress"])
    captured = capsys.readouterr()
    assert exit_.value.code == 2
    assert captured.err.strip().splitlines()[-1] == (
        "error: --stats needs the vocabulary the records were made with: pass --spm_model (no "
        "summary.json of these records names one)")
    assert "checked" not in captured.out
