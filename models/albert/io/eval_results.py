"""eval_results.json in a run's --output_dir: the last evaluation's scores (a task's own entries:
SQuAD's version and scores, a classifier's file, labels and metrics) and, with --keep_best,
which model was kept. The one writer and the one reader of that file."""

from __future__ import annotations

import json
import os

from albert.errors import DataError

EVAL_RESULTS = "eval_results.json"


def eval_results_path(output_dir: str) -> str:
    return os.path.join(output_dir, EVAL_RESULTS)


def write_eval_results(output_dir: str, results: dict) -> str:
    """Replace the file with `results` (written whole beside it, then renamed: a reader never
    sees half of it); returns its path."""
    os.makedirs(output_dir, exist_ok=True)
    path = eval_results_path(output_dir)
    with open(path + ".tmp", "w", encoding="utf-8") as f:
        json.dump(results, f, indent=2)
    os.replace(path + ".tmp", path)
    return path


def read_eval_results(output_dir: str) -> dict | None:
    """The scores written last; None when no evaluation wrote any."""
    path = eval_results_path(output_dir)
    if not os.path.isfile(path):
        return None
    try:
        with open(path, encoding="utf-8") as f:
            results = json.load(f)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise DataError(f"{path} is unreadable ({e})") from None
    if not isinstance(results, dict):
        raise DataError(f"{path} does not hold a JSON object")
    return results


def add_eval_results(output_dir: str, **entries) -> dict | None:
    """The file with `entries` added, when an evaluation wrote one (None: none was)."""
    results = read_eval_results(output_dir)
    if results is None:
        return None
    results.update(entries)
    write_eval_results(output_dir, results)
    return results
