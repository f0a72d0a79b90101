"""--data_prep: create_pretraining_data's instances per second and the peak memory of its
whole process tree, on the user's text."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time


def bench_data_prep(args) -> dict:
    """create_pretraining_data on --data_prep (a file, directory, glob or comma list, any format
    the generator reads), shuffle on, one process per core: instances/s (start-up included) and
    the peak resident memory of the whole process tree (generator, readers, workers), sampled
    every 50 ms."""
    import psutil

    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "out")
        cmd = [sys.executable, "-m", "albert.create_pretraining_data", "--input", args.data_prep,
               "--spm_model", args.spm_model, "--output_dir", out, "--max_seq_length",
               str(args.max_seq_length), "--max_predictions_per_seq",
               str(args.max_predictions_per_seq), "--processes", str(os.cpu_count() or 1),
               "--num_shards", "4", "--no_progress"]
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        peak = 0
        root = psutil.Process(proc.pid)
        while proc.poll() is None:
            try:
                tree = [root, *root.children(recursive=True)]
                peak = max(peak, sum(p.memory_info().rss for p in tree if p.is_running()))
            except psutil.Error:
                pass
            time.sleep(0.05)
        wall = time.perf_counter() - start
        if proc.returncode != 0:
            raise SystemExit(f"error: create_pretraining_data failed: {proc.stderr.read()[-500:]}")
        with open(os.path.join(out, "summary.json")) as f:
            summary = json.load(f)
    text_bytes = sum(os.path.getsize(f) for f in summary.get("input_files", [])
                     if os.path.isfile(f))
    return {"data_prep_instances_per_sec": summary["instances"] / wall,
            "data_prep_instances": summary["instances"], "data_prep_processes": os.cpu_count(),
            "data_prep_input_mb": text_bytes / 1e6, "data_prep_peak_memory_mb": peak / 1e6}
