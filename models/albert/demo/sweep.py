"""What each pretraining choice buys, one change at a time: scripts/demo.sh sweep.

    python -m albert.demo.sweep --demo_dir demo_output --steps 1000

Pretrains the demo's tiny model again once per variant, each changing one thing in the demo's
recipe (tiny, 64 tokens, batch 32, LAMB at 0.01 with 100 warmup steps, n-gram masking up to 3,
no dropout), for the same number of updates, and scores every run on the demo's own held-out
records, so the figures are comparable. A variant that masks or packs differently writes its own
training records from the demo's corpus and vocabulary (the same held-out documents are left
out: the split is drawn per document). One whose records are longer, or hold more masked
positions, reads the demo's held-out records padded to its shape: the padding is masked out of
attention and weighs nothing in the scores, so every run answers the same masked tokens in the
same contexts. Prints one row per variant (held-out MLM and SOP accuracy
against the demo's recipe, with the noise of a difference) and writes the table to
<demo_dir>/sweep/table.md; each run's logs are under <demo_dir>/sweep/<variant>/.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass

from albert.cli import flags
from albert.cli.quiet_start import import_tensorflow, start_environment
from albert.errors import FlagError

DEMO_MASKED_SHARE = 0.15   # create_pretraining_data's --masked_lm_prob, which the demo keeps


@dataclass(frozen=True)
class Variant:
    name: str
    change: str
    pretraining: tuple[str, ...] = ()   # extra run_pretraining flags (the last one wins)
    records: tuple[str, ...] = ()       # extra create_pretraining_data flags: records of its own
    length_factor: int = 1              # sequences this many times the demo's: records of its own
    masked_share: float = 0.0           # a masking rate other than the demo's: records of its own

    def shape(self, max_seq_length: int, max_predictions: int) -> tuple[int, int]:
        """(sequence length, masked positions) of this variant's records, from the demo's: the
        positions grow with the length and the masking rate, so the cap binds as the demo's
        does."""
        share = self.masked_share or DEMO_MASKED_SHARE
        scale = self.length_factor * share / DEMO_MASKED_SHARE
        return max_seq_length * self.length_factor, math.ceil(round(max_predictions * scale, 6))

    @property
    def own_records(self) -> bool:
        return bool(self.records) or self.length_factor != 1 or bool(self.masked_share)


DROPOUT = ("--config_override", "hidden_dropout_prob=0.1", "attention_probs_dropout_prob=0.1")
WIDE = ("--config_override", "hidden_size=256", "num_attention_heads=4", "intermediate_size=1024")

VARIANTS = (
    Variant("demo", "the demo's recipe"),
    Variant("lr0.003", "LAMB rate 0.003", ("--learning_rate", "0.003")),
    Variant("lr0.02", "LAMB rate 0.02", ("--learning_rate", "0.02")),
    Variant("lr0.04", "LAMB rate 0.04", ("--learning_rate", "0.04")),
    Variant("warmup300", "300 warmup steps", ("--warmup_steps", "300")),
    Variant("adamw", "AdamW at 1e-3 (bias-corrected)", ("--optimizer", "adamw",
                                                         "--learning_rate", "0.001")),
    Variant("batch64", "batch 64: twice the sequences", ("--per_gpu_batch_size", "64")),
    Variant("dropout0.1", "dropout 0.1", DROPOUT),
    Variant("ngram1", "single-token masking", records=("--ngram", "1")),
    Variant("wide", "hidden 256, 4 heads, feed-forward 1024", WIDE),
    Variant("mask0.25", "25% of the tokens masked", masked_share=0.25),
    Variant("mask0.4", "40% of the tokens masked", masked_share=0.4),
    Variant("seq2x", "sequences twice as long: twice the tokens per update", length_factor=2),
)
BY_NAME = {v.name: v for v in VARIANTS}


def _records(path: str) -> list[dict]:
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def tfrecords(directory: str) -> list[str]:
    """The record files create_pretraining_data wrote to one split's directory, in order."""
    return sorted(os.path.join(directory, n) for n in os.listdir(directory)
                  if n.endswith(".tfrecord"))


def _run(cmd: list[str], log: str) -> None:
    with open(log, "w", encoding="utf-8") as f:
        proc = subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT)
    if proc.returncode:
        with open(log, encoding="utf-8") as f:
            tail = f.read()[-2000:]
        raise SystemExit(f"{' '.join(cmd[:3])} failed (exit {proc.returncode}); its log "
                         f"{log} ends:\n{tail}")


def pad_records(files: list[str], out_dir: str, max_seq_length: int,
                max_predictions: int) -> list[str]:
    """Copies of pretraining records padded with zeros to a larger shape: padded tokens have
    input_mask 0 (no token attends to them) and padded masked positions weight 0, so a model
    scores exactly the tokens it scored before, in the same contexts."""
    import tensorflow as tf  # TensorFlow only here: the table's other parts need none

    widths = {"input_ids": max_seq_length, "input_mask": max_seq_length,
              "segment_ids": max_seq_length, "masked_lm_positions": max_predictions,
              "masked_lm_ids": max_predictions, "masked_lm_weights": max_predictions}
    os.makedirs(out_dir, exist_ok=True)
    written = []
    for path in files:
        target = os.path.join(out_dir, os.path.basename(path))
        with tf.io.TFRecordWriter(target) as writer:
            for raw in tf.data.TFRecordDataset(path):
                example = tf.train.Example.FromString(raw.numpy())
                for name, width in widths.items():
                    feature = example.features.feature[name]
                    values = (feature.float_list if name == "masked_lm_weights"
                              else feature.int64_list).value
                    if len(values) > width:
                        raise SystemExit(f"{path}: {name} holds {len(values)} values, more than "
                                         f"the {width} of the shape it is padded to")
                    values.extend([0] * (width - len(values)))
                writer.write(example.SerializeToString())
        written.append(target)
    return written


def clear(path: str) -> None:
    """Remove `path`; a symbolic link goes, never what it points to (rmtree refuses a link)."""
    if os.path.islink(path) or os.path.isfile(path):
        os.unlink(path)
    elif os.path.isdir(path):
        shutil.rmtree(path)


def run_variant(variant: Variant, demo_dir: str, out: str, args) -> dict:
    """Pretrain one variant; return its last held-out figures and its seconds."""
    py = [sys.executable, "-m"]
    vocab = os.path.join(demo_dir, "vocab", "spiece.model")
    seq, predictions = variant.shape(args.max_seq_length, args.max_predictions_per_seq)
    shapes = ["--max_seq_length", str(seq), "--max_predictions_per_seq", str(predictions)]
    train = os.path.join(demo_dir, "pretraining_data", "train")
    validation = os.path.join(demo_dir, "pretraining_data", "validation")
    run_dir = os.path.join(out, variant.name)
    # Each sweep runs its variants afresh: an earlier run's records or finished checkpoint would
    # otherwise be refused, or taken as this run's.
    clear(run_dir)
    os.makedirs(run_dir)
    started = time.monotonic()
    if variant.own_records:
        # The demo's masking and packing otherwise: copies, shards, held-out share.
        data = os.path.join(run_dir, "pretraining_data")
        share = (["--masked_lm_prob", str(variant.masked_share)] if variant.masked_share else [])
        _run([*py, "albert.create_pretraining_data", "--input",
              os.path.join(demo_dir, "corpus.txt"), "--spm_model", vocab, "--output_dir", data,
              *shapes, "--dupe_factor", str(args.dupe_factor), "--num_shards", "4",
              "--validation_fraction", "0.05", "--no_progress", *share, *variant.records],
             os.path.join(run_dir, "records.log"))
        train = os.path.join(data, "train")
    if (seq, predictions) != (args.max_seq_length, args.max_predictions_per_seq):
        padded = os.path.join(run_dir, "demo_validation_padded")
        pad_records(tfrecords(validation), padded, seq, predictions)
        validation = padded
    _run([*py, "albert.run_pretraining", "--model_size", "tiny", "--spm_model", vocab,
          "--filesystem_prefix", "/", "--train_dir", os.path.abspath(train),
          "--val_dir", os.path.abspath(validation),
          *shapes, "--per_gpu_batch_size", "32", "--total_steps", str(args.steps),
          "--warmup_steps", str(args.warmup_steps), "--learning_rate", str(args.learning_rate),
          "--seed", str(args.seed), "--log_frequency", str(max(1, args.steps // 20)),
          "--validation_frequency", str(args.steps), "--checkpoint_frequency", "0",
          "--no_progress", "--xla", args.xla, "--checkpoint_dir",
          os.path.join(run_dir, "checkpoints"), "--log_dir", os.path.join(run_dir, "logs"),
          *variant.pretraining],
         os.path.join(run_dir, "pretraining.log"))
    seconds = time.monotonic() - started
    records = _records(os.path.join(run_dir, "logs", "metrics.jsonl"))
    held_out = [r for r in records if r["split"] == "val"]
    if not held_out:
        raise SystemExit(f"{variant.name}: run_pretraining wrote no held-out figures to "
                         f"{run_dir}/logs/metrics.jsonl")
    last = held_out[-1]
    return {"variant": variant.name, "change": variant.change, "step": last["step"],
            "mlm_acc": last["mlm_acc"], "sop_acc": last["sop_acc"], "mlm_loss": last["mlm_loss"],
            "sop_loss": last["sop_loss"], "seconds": round(seconds, 1)}


def noise(accuracy: float, tokens: int) -> float:
    """Two standard errors of a difference between two runs' accuracies on the same tokens,
    each taken as an independent draw: what a difference must exceed to be read as one."""
    return 2 * math.sqrt(2 * accuracy * (1 - accuracy) / tokens) if tokens else float("nan")


def table(rows: list[dict], baselines: dict, masked_tokens: int, steps: int) -> str:
    # Without the demo's own row there is nothing to read a row against: no differences.
    demo = next((r for r in rows if r["variant"] == "demo"), None)
    margin = noise((demo or rows[0])["mlm_acc"], masked_tokens)
    lines = [f"{steps} updates each, scored on the demo's held-out records ({masked_tokens} "
             f"masked tokens); the most frequent token scores "
             f"{baselines['validation']['mlm_unigram_acc']:.4f} MLM, a coin 0.5 SOP. A "
             f"difference in MLM accuracy under {margin:.4f} is within noise (two standard "
             "errors).", "",
             "| variant | what changes | held-out MLM | against the demo's | held-out SOP | "
             "seconds |",
             "| --- | --- | --- | --- | --- | --- |"]
    for r in rows:
        diff = r["mlm_acc"] - (demo or r)["mlm_acc"]
        lines.append(f"| {r['variant']} | {r['change']} | {r['mlm_acc']:.4f} | "
                     f"{'' if demo is None or r is demo else f'{diff:+.4f}'} | "
                     f"{r['sop_acc']:.4f} | "
                     f"{r['seconds']:.0f} |")
    return "\n".join(lines)


def masked_token_count(files, max_seq_length: int, max_predictions: int) -> int:
    # TensorFlow (the pretraining task's reader): the sweep's --help and flag checks run without it.
    from albert.tasks.pretraining import masked_token_counts

    return sum(masked_token_counts(files, max_seq_length, max_predictions).values())


def build_parser() -> flags.Parser:
    p = flags.Parser(description=__doc__.split("\n\n")[0])
    p.add_argument("--demo_dir", required=True, help="the demo's output directory")
    p.add_argument("--steps", type=int, default=1000, help="updates per variant")
    p.add_argument("--variants", nargs="+", default=[v.name for v in VARIANTS],
                   help=f"which variants, in order (default: all: "
                        f"{', '.join(v.name for v in VARIANTS)})")
    p.add_argument("--max_seq_length", type=int, default=64, help="the demo's records' shape")
    p.add_argument("--max_predictions_per_seq", type=int, default=10,
                   help="the demo's records' shape")
    p.add_argument("--dupe_factor", type=int, default=5,
                   help="masked copies of the corpus, for variants that write records")
    p.add_argument("--learning_rate", type=float, default=0.01,
                   help="the demo's LAMB rate, which the rate variants replace")
    p.add_argument("--warmup_steps", type=int, default=100, help="the demo's warmup")
    p.add_argument("--seed", type=int, default=1, help="every variant's pretraining seed")
    p.add_argument("--xla", choices=("on", "off"), default="on", help="XLA-compile the step")
    p.add_argument("--fresh", action="store_true",
                   help="remove <demo_dir>/sweep (an earlier sweep's runs and table) first, once "
                        "every other flag is checked: what scripts/demo.sh sweep does")
    return p


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    start_environment(args.verbose)  # as every tool: before TensorFlow reads it
    with flags.user_errors():
        unknown = [v for v in args.variants if v not in BY_NAME]
        if unknown:
            raise FlagError(f"--variants: unknown {', '.join(unknown)}; expected some of "
                            f"{', '.join(BY_NAME)}")
        if args.steps <= args.warmup_steps:
            raise FlagError(f"--steps {args.steps}: expected more than --warmup_steps "
                            f"({args.warmup_steps})")
        validation = os.path.join(args.demo_dir, "pretraining_data", "validation")
        baselines_path = os.path.join(args.demo_dir, "pretraining", "baselines.json")
        if not os.path.isdir(validation) or not os.path.isfile(baselines_path):
            raise FlagError(f"--demo_dir {args.demo_dir}: no finished demo there (expected "
                            f"{validation} and {baselines_path}); run scripts/demo.sh first")
        with open(baselines_path, encoding="utf-8") as f:
            baselines = json.load(f)
        out = os.path.join(args.demo_dir, "sweep")
        # Only here, after every check above: a mistyped variant keeps the previous sweep.
        if args.fresh:
            clear(out)
        import_tensorflow(args.verbose)  # the padded records; the runs are commands of their own
        rows = []
        for name in args.variants:
            print(f"--- {name}: {BY_NAME[name].change} ({args.steps} updates)", flush=True)
            rows.append(run_variant(BY_NAME[name], args.demo_dir, out, args))
            print(f"    held-out MLM {rows[-1]['mlm_acc']:.4f}, SOP {rows[-1]['sop_acc']:.4f}, "
                  f"{rows[-1]['seconds']:.0f} s", flush=True)
        text = table(rows, baselines, masked_token_count(
            tfrecords(validation), args.max_seq_length, args.max_predictions_per_seq), args.steps)
        with open(os.path.join(out, "table.md"), "w", encoding="utf-8") as f:
            f.write(text + "\n")
        with open(os.path.join(out, "results.json"), "w", encoding="utf-8") as f:
            json.dump(rows, f, indent=1)
        print()
        print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
