"""Score SQuAD predictions with the official v1.1 / v2.0 rules; prints JSON.

    python -m albert.squad_eval dev-v2.0.json predictions.json --na_prob_file null_odds.json

The version is read from the data file (its "version" field), so v1.1 data is scored as v1.1.
The official scripts' dashed flags (--na-prob-file, --out-file) still work.
Questions without a prediction are handled as the official scripts do (v1.1: scored 0; v2.0: left
out of the scores), with one warning on stderr that counts them. Inputs the official scripts
crash on (an answer that is not a string, a no-answer value that is not a number, a no-answer
file without some predicted question) are one `error: ...` line and exit status 2.
"""

from __future__ import annotations

import json
import sys

from albert.cli import flags
from albert.errors import DataError
from albert.eval.squad_scoring import (
    check_na_probs,
    check_predictions,
    detect_version,
    evaluate,
    question_ids,
)
from albert.tasks.squad_options import VERSIONS


def _load_json(path: str, what: str):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except FileNotFoundError:
        raise FileNotFoundError(f"{what} not found: {path}") from None
    except json.JSONDecodeError as e:
        raise DataError(f"{what} {path} is not valid JSON: {e}") from None


def build_parser() -> flags.Parser:
    # The old spellings are the official evaluate-v2.0.py script's.
    p = flags.Parser(description=__doc__.split("\n\n")[0])
    p.add_argument("data_file", help="the SQuAD JSON the predictions answer")
    p.add_argument("pred_file", help="predictions.json: {question id: answer text}")
    p.add_argument("--na_prob_file", action=flags.Renamed, old=("--na-prob-file",),
                   default=None,
                   help="v2.0: null_odds.json, {question id: no-answer score}, for the best "
                        "thresholds")
    p.add_argument("--squad_version", action=flags.Renamed, old=("--version",),
                   old_values={v: k for k, v in VERSIONS.items()}, choices=tuple(VERSIONS),
                   default=None,
                   help="score by these rules instead of the data file's version (v1.1 and "
                        "v2.0 are read as squadv1 and squadv2)")
    p.add_argument("--output", action=flags.Renamed, old=("--out-file", "--out_file"),
                   default=None, help="also write the scores (JSON) to this file")
    return p


def parse_args(argv=None):
    return build_parser().parse_args(argv)


def run(args) -> int:
    """The scores on stdout (and in --output); a file that is missing or not SQuAD's layout is
    run_main's one line and status 2."""
    data = _load_json(args.data_file, "data file")
    if not isinstance(data, dict) or not isinstance(data.get("data"), list):
        raise DataError(f"{args.data_file} is not a SQuAD file (no top-level 'data' list)")
    preds = _load_json(args.pred_file, "predictions file")
    check_predictions(preds, f"predictions file {args.pred_file}")
    version = VERSIONS.get(args.squad_version) or detect_version(data)
    try:
        qids = question_ids(data)
        missing = [q for q in qids if q not in preds]
    except (KeyError, TypeError) as e:
        raise DataError(f"{args.data_file} is not in the SQuAD layout (data -> paragraphs "
                        f"-> qas with an 'id' string): {e!r}") from None
    na_probs = None
    if args.na_prob_file:
        na_probs = _load_json(args.na_prob_file, "no-answer file")
        if version == "v2.0":
            check_na_probs(na_probs, [q for q in qids if q in preds],
                           f"no-answer file {args.na_prob_file}")
    try:
        result = evaluate(data, preds, na_probs, version)
    except (KeyError, TypeError) as e:
        raise DataError(f"{args.data_file}: a question lacks a field the SQuAD layout has "
                        f"({e!r})") from None
    if missing:
        rule = ("scored 0 and counted in the total" if version == "v1.1"
                else "left out of every score and total")
        shown = ", ".join(str(q) for q in missing[:5])
        if len(missing) > 5:
            shown += f" and {len(missing) - 5} more"
        print(f"warning: {len(missing)} of the questions in {args.data_file} have no prediction "
              f"in {args.pred_file} ({shown}); as in the official {version} script they are "
              f"{rule}", file=sys.stderr)
    text = json.dumps(result, indent=2)
    print(text)
    if args.output:
        with open(args.output, "w", encoding="utf-8") as f:
            f.write(text + "\n")
    return 0


def main(argv=None) -> int:
    return flags.run_main(parse_args, run, argv, needs_tensorflow=False)  # scoring is numbers


if __name__ == "__main__":
    sys.exit(main())
