"""Score SQuAD predictions with the official v1.1 / v2.0 rules; prints JSON.

    python -m albert.squad_eval dev-v2.0.json predictions.json --na-prob-file null_odds.json

The version is read from the data file (its "version" field), so v1.1 data is scored as v1.1.
"""

from __future__ import annotations

import argparse
import json
import sys

from albert.squad_metrics import evaluate


def _load_json(path: str, what: str):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except FileNotFoundError:
        raise FileNotFoundError(f"{what} not found: {path}") from None
    except json.JSONDecodeError as e:
        raise ValueError(f"{what} {path} is not valid JSON: {e}") from None


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("data_file")
    p.add_argument("pred_file")
    p.add_argument("--na-prob-file", "--na_prob_file", dest="na_prob_file", default=None)
    p.add_argument("--version", choices=("v1.1", "v2.0"), default=None,
                   help="override the version read from the data file")
    p.add_argument("--out-file", "--out_file", dest="out_file", default=None)
    args = p.parse_args(argv)
    try:
        data = _load_json(args.data_file, "data file")
        if not isinstance(data, dict) or "data" not in data:
            raise ValueError(f"{args.data_file} is not a SQuAD file (no top-level 'data' list)")
        preds = _load_json(args.pred_file, "predictions file")
        if not isinstance(preds, dict):
            raise ValueError(f"{args.pred_file} must map question ids to answer strings")
        na_probs = _load_json(args.na_prob_file, "no-answer file") if args.na_prob_file else None
        result = evaluate(data, preds, na_probs, args.version)
    except (ValueError, FileNotFoundError, KeyError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    text = json.dumps(result, indent=2)
    print(text)
    if args.out_file:
        with open(args.out_file, "w", encoding="utf-8") as f:
            f.write(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
