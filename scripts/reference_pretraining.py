"""Pretrain with our trainer and with an independent PyTorch reference side by side; compare curves.

    .venv/bin/python scripts/reference_pretraining.py --records data \\
        --spm_model vocab/spiece.model --max_seq_length 64 --max_predictions_per_seq 10 \\
        --batch_size 32 --steps 1000 --optimizer adamw --learning_rate 1e-3 --warmup_steps 100 \\
        --output ref.json

Rules our pretraining pipeline out (or in) as the reason a pretrained model learns little: both
sides start from the same weights (ours built as run_pretraining builds a new model, written with
albert.io.pretrained.save_pretrained, loaded into transformers' AlbertForPreTraining) and train on
the same batches in the same order, read once from <records>/train with albert.data.reader as
run_pretraining reads them (its shuffle buffer and --seed). Ours is albert.train.trainer.Trainer
with pretraining_loss, make_optimizer and the learning-rate schedule, weight decay, bias correction
and max_grad_norm of run_pretraining's defaults, with XLA off (as the demo pretrains). The
reference is torch on the CPU: the pretraining loss, LAMB/AdamW, the warmup + linear decay schedule
and clipping by global norm, each written here from its published definition.

Every --eval_every updates (and before the first) both score the same fixed validation batches
(the first --eval_batches of <records>/validation): masked-LM and sentence-order accuracy and loss;
beside them the mean training loss of the updates since the last evaluation. The dropout of the
model config (the tiny preset: the sentence-order head's 0.1) draws different masks on each side,
so the curves agree within noise, not to the digit; --no_dropout zeroes it, and then the first
update's losses agree to float32 rounding.

The JSON (--output) holds both curves ("ours", "reference": "evals" and per-update "train_loss",
"grad_norm"), the first update's losses, the largest difference of the two schedules' learning
rates, and the noise to judge the gap by: the binomial standard error of the masked-LM accuracy
on the validation tokens and the spread of each side's last evaluations. A side whose losses stop
being finite has diverged: "diverged" names where, the closing line says so instead of comparing,
and the exit status is 1 (a non-finite number is null in the JSON).
"""

from __future__ import annotations

import json
import math
import os
import sys
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

import numpy as np  # noqa: E402

from albert.cli.flags import Parser, run_main  # noqa: E402
from albert.errors import DataError, FlagError  # noqa: E402
from albert.model.config import PRESETS  # noqa: E402

# TensorFlow, Keras, torch and transformers are imported in the functions that use them, after
# run_main has quietened their start-up (albert.cli.quiet_start) and read the flags.

# Adam's constants as the LAMB paper and AdamW publish them (and our optimizer's defaults).
BETA_1, BETA_2, EPSILON = 0.9, 0.999, 1e-6
# How many of the last evaluations measure each side's own wobble.
LAST_POINTS = 4


def parse_args(argv=None):
    p = Parser(description=__doc__.split("\n\n")[0])  # every tool's (--verbose too)
    p.add_argument("--records", required=True,
                   help="directory with train/*.tfrecord and validation/*.tfrecord "
                        "(python -m albert.create_pretraining_data)")
    p.add_argument("--spm_model", required=True, help="the vocabulary the records were made with")
    p.add_argument("--max_seq_length", type=int, default=64)
    p.add_argument("--max_predictions_per_seq", type=int, default=10)
    p.add_argument("--batch_size", type=int, default=32)
    p.add_argument("--steps", type=int, default=1000, help="updates (run_pretraining's "
                                                           "--total_steps: the schedule's end)")
    p.add_argument("--learning_rate", type=float, default=1e-3)
    p.add_argument("--warmup_steps", type=int, default=100)
    p.add_argument("--optimizer", choices=("lamb", "adamw"), default="adamw")
    p.add_argument("--model_size", choices=sorted(PRESETS), default="tiny")
    p.add_argument("--no_dropout", action="store_true",
                   help="every dropout of the config 0 (the two sides then agree to rounding)")
    p.add_argument("--eval_every", type=int, default=100)
    p.add_argument("--eval_batches", type=int, default=10,
                   help="validation batches of --batch_size scored at each evaluation")
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--threads", type=int, default=0,
                   help="CPU threads of each side's kernels (0: the libraries' defaults); on a "
                        "busy machine 1 is faster, most of all for torch")
    p.add_argument("--output", default="reference_pretraining.json")
    args = p.parse_args(argv)
    if args.threads < 0:
        raise FlagError(f"--threads must be 0 or more, got {args.threads}")
    # nan passes every comparison with a bound: both sides would train on NaN from the first
    # update and then agree to the digit.
    if not math.isfinite(args.learning_rate) or args.learning_rate < 0:
        raise FlagError(f"--learning_rate must be a finite number of 0 or more, got "
                        f"{args.learning_rate}")
    if args.warmup_steps < 0:
        raise FlagError(f"--warmup_steps must be 0 or more, got {args.warmup_steps}")
    for flag in ("steps", "batch_size", "eval_every", "eval_batches"):
        if getattr(args, flag) < 1:
            raise FlagError(f"--{flag} must be at least 1, got {getattr(args, flag)}")
    return args


def pipeline_settings(steps: int):
    """run_pretraining's defaults for what this script has no flag for: weight decay, bias
    correction, clipping and the decay's shape."""
    from albert import run_pretraining  # imports TensorFlow: see the note at the top

    d = run_pretraining.parse_args(["--total_steps", str(steps)])
    return {"weight_decay": d.weight_decay, "bias_correction": d.bias_correction == "on",
            "max_grad_norm": d.max_grad_norm, "end_learning_rate": d.end_learning_rate,
            "decay_power": d.decay_power, "lr_decay": d.lr_decay,
            "shuffle_buffer": d.shuffle_buffer}


# -- data -----------------------------------------------------------------------------------------

def read_batches(args, split: str, count: int, training: bool, shuffle_buffer: int):
    """The first `count` batches of <records>/<split> as run_pretraining reads them, as numpy;
    and the files they come from."""
    # TensorFlow: see the note at the top.
    from albert.data.reader import check_all_record_shapes, pretraining_dataset, resolve_files

    files = resolve_files(split, args.records)
    empty = check_all_record_shapes(files, args.max_seq_length, args.max_predictions_per_seq)
    if len(empty) == len(files):
        raise DataError(f"--records {args.records!r}: every file of {split}/ is empty")
    ds = pretraining_dataset(split, args.batch_size, args.max_seq_length,
                             args.max_predictions_per_seq, filesystem_prefix=args.records,
                             training=training, seed=args.seed, shuffle_buffer=shuffle_buffer)
    return [{k: v.numpy() for k, v in batch.items()} for batch in ds.take(count)], files


# -- the reference: torch, from the published definitions -----------------------------------------

def reference_learning_rate(step: int, peak: float, warmup: int, total: int) -> float:
    """Linear warmup over updates 1..W (the first update at peak / W), then linear decay to 0 over
    the remaining updates (transformers' get_polynomial_decay_schedule_with_warmup, power 1)."""
    if step < warmup:
        return peak * (step + 1) / warmup
    progress = min(max((step - warmup) / max(total - warmup, 1), 0.0), 1.0)
    return peak * (1.0 - progress)


class ReferenceOptimizer:
    """LAMB (You et al. 2019, Algorithm 2) or AdamW (Loshchilov & Hutter) with Adam's bias
    correction; weight decay and the trust ratio skipped for LayerNorm and bias parameters."""

    def __init__(self, named_parameters, lamb: bool, weight_decay: float, corrected: bool):
        import torch  # see the note at the top

        self.params = list(named_parameters)
        self.lamb, self.weight_decay, self.corrected = lamb, weight_decay, corrected
        self.m = {n: torch.zeros_like(p) for n, p in self.params}
        self.v = {n: torch.zeros_like(p) for n, p in self.params}
        self.t = 0

    @staticmethod
    def excluded(name: str) -> bool:
        return "LayerNorm" in name or "layer_norm" in name or name.endswith("bias")

    def step(self, lr: float) -> None:
        import torch  # see the note at the top

        self.t += 1
        with torch.no_grad():
            for name, p in self.params:
                g = p.grad if p.grad is not None else torch.zeros_like(p)
                self.m[name] = BETA_1 * self.m[name] + (1 - BETA_1) * g
                self.v[name] = BETA_2 * self.v[name] + (1 - BETA_2) * g * g
                m, v = self.m[name], self.v[name]
                if self.corrected:
                    m, v = m / (1 - BETA_1 ** self.t), v / (1 - BETA_2 ** self.t)
                update = m / (v.sqrt() + EPSILON)
                ratio = 1.0
                if not self.excluded(name):
                    update = update + self.weight_decay * p
                    if self.lamb:
                        w_norm, u_norm = float(p.norm()), float(update.norm())
                        if w_norm > 0 and u_norm > 0:
                            ratio = w_norm / u_norm
                p -= lr * ratio * update


def reference_forward(model, batch):
    """(loss, sums): the masked-LM loss of each sequence (the mean cross-entropy of its masked
    tokens), averaged over sequences, plus the mean sentence-order cross-entropy; the sums count
    what the accuracies and the mean losses are made of."""
    # torch: see the note at the top.
    import torch
    import torch.nn.functional as F

    t = {k: torch.from_numpy(np.asarray(v)) for k, v in batch.items()}
    out = model(input_ids=t["input_ids"].long(), attention_mask=t["attention_mask"].long(),
                token_type_ids=t["token_type_ids"].long())
    positions = t["masked_lm_positions"].long()
    logits = torch.gather(out.prediction_logits, 1,
                          positions[..., None].expand(-1, -1, out.prediction_logits.shape[-1]))
    labels, weights = t["masked_lm_ids"].long(), t["masked_lm_weights"].float()
    token_ce = F.cross_entropy(logits.transpose(1, 2), labels, reduction="none")
    per_sequence = (token_ce * weights).sum(-1) / weights.sum(-1).clamp(min=1.0)
    sop_labels = t["sop_labels"].long()
    sop_ce = F.cross_entropy(out.sop_logits, sop_labels, reduction="none")
    loss = per_sequence.mean() + sop_ce.mean()
    with torch.no_grad():
        sums = {"examples": float(labels.shape[0]),
                "mlm_loss_sum": float(per_sequence.sum()),
                "mlm_correct": float(((logits.argmax(-1) == labels).float() * weights).sum()),
                "mlm_count": float(weights.sum()),
                "sop_loss_sum": float(sop_ce.sum()),
                "sop_correct": float((out.sop_logits.argmax(-1) == sop_labels).float().sum())}
    return loss, sums


def reference_update(model, optimizer, batch, lr: float, max_grad_norm: float):
    """One update: gradient of the batch's loss, clipped by global norm, one optimizer step.
    Returns (loss, gradient norm before clipping)."""
    import torch  # see the note at the top

    model.zero_grad(set_to_none=True)
    loss, _ = reference_forward(model, batch)
    loss.backward()
    grads = [p.grad for _, p in optimizer.params if p.grad is not None]
    norm = float(torch.sqrt(sum((g.double() ** 2).sum() for g in grads)))
    if max_grad_norm > 0 and norm > max_grad_norm:
        for g in grads:
            g.mul_(max_grad_norm / norm)
    optimizer.step(lr)
    return float(loss.detach()), norm


def reference_evaluate(model, batches) -> dict:
    import torch  # see the note at the top

    model.eval()
    totals: dict = {}
    with torch.no_grad():
        for batch in batches:
            _, sums = reference_forward(model, batch)
            for k, v in sums.items():
                totals[k] = totals.get(k, 0.0) + v
    model.train()
    return scores_of(totals)


def scores_of(sums: dict) -> dict:
    n = max(sums["examples"], 1.0)
    mlm_loss, sop_loss = sums["mlm_loss_sum"] / n, sums["sop_loss_sum"] / n
    return {"mlm_acc": sums["mlm_correct"] / max(sums["mlm_count"], 1.0),
            "sop_acc": sums["sop_correct"] / n, "mlm_loss": mlm_loss, "sop_loss": sop_loss,
            "loss": mlm_loss + sop_loss}


# -- the run --------------------------------------------------------------------------------------

def build_both(args, settings, start_dir: str):
    """Our model and trainer, as run_pretraining starts a new run; transformers' model from the
    same weights, with its reference optimizer."""
    # See the note at the top.
    import keras
    import tensorflow as tf
    import torch
    import transformers

    from albert.data.tokenization import load_spm
    from albert.io.pretrained import save_pretrained
    from albert.model.config import AlbertConfig
    from albert.model.modeling import AlbertForPreTraining
    from albert.tasks.losses import PRETRAINING_METRICS, pretraining_loss
    from albert.train.distributed import Distributed
    from albert.train.optimization import make_optimizer, schedule
    from albert.train.run_spec import Optimization, check_fits
    from albert.train.trainer import Trainer
    from albert.train.xla_plan import XlaPlan

    overrides = {"vocab_size": load_spm(args.spm_model).GetPieceSize()}
    if args.no_dropout:
        overrides.update(hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0,
                         classifier_dropout_prob=0.0)
    config = AlbertConfig.from_preset(args.model_size, **overrides)
    check_fits(config, args.max_seq_length)
    keras.utils.set_random_seed(args.seed)
    torch.manual_seed(args.seed)
    model = AlbertForPreTraining(config).build_for_config()
    o = Optimization(optimizer=args.optimizer, bias_correction=settings["bias_correction"],
                     learning_rate=args.learning_rate,
                     end_learning_rate=settings["end_learning_rate"],
                     lr_decay=settings["lr_decay"], decay_power=settings["decay_power"],
                     warmup_steps=args.warmup_steps, weight_decay=settings["weight_decay"],
                     max_grad_norm=settings["max_grad_norm"])
    trainer = Trainer(model, pretraining_loss,
                      make_optimizer(o.optimizer, model.trainable_variables, o.weight_decay,
                                     bias_correction=o.bias_correction),
                      schedule(o, args.steps), Distributed(), metric_names=PRETRAINING_METRICS,
                      accum_steps=1, precision="fp32", xla=XlaPlan(False, False, "--xla off"),
                      max_grad_norm=o.max_grad_norm, seed=args.seed)

    save_pretrained(model, start_dir)
    reference, info = transformers.AlbertForPreTraining.from_pretrained(
        start_dir, output_loading_info=True)
    missing = [k for k in info["missing_keys"] if "position_ids" not in k]
    if missing or info["unexpected_keys"]:
        raise RuntimeError(f"transformers read our weights with missing {missing} and "
                           f"unexpected {info['unexpected_keys']}")
    reference = reference.float().train()
    optimizer = ReferenceOptimizer(reference.named_parameters(), lamb=args.optimizer == "lamb",
                                   weight_decay=o.weight_decay, corrected=o.bias_correction)
    return tf, config, model, trainer, reference, optimizer, o


def set_threads(threads: int) -> None:
    # See the note at the top.
    import tensorflow as tf
    import torch

    if not threads:
        return
    torch.set_num_threads(threads)
    try:
        tf.config.threading.set_intra_op_parallelism_threads(threads)
        tf.config.threading.set_inter_op_parallelism_threads(threads)
    except RuntimeError:
        pass  # TensorFlow already started in this process (main called in-process): as it is


def run(args) -> int:
    started = time.time()
    set_threads(args.threads)
    settings = pipeline_settings(args.steps)
    if (settings["end_learning_rate"], settings["decay_power"], settings["lr_decay"]) != (
            0.0, 1.0, "from_warmup"):
        raise FlagError("the reference's schedule is run_pretraining's default (linear decay "
                        f"to 0 after warmup); run_pretraining's defaults are now {settings}")
    for split in ("train", "validation"):
        if not os.path.isdir(os.path.join(args.records, split)):
            raise DataError(f"--records {args.records!r} has no {split}/ directory (expected "
                            "train/*.tfrecord and validation/*.tfrecord, as "
                            "python -m albert.create_pretraining_data writes them)")
    train, train_files = read_batches(args, "train", args.steps, True, settings["shuffle_buffer"])
    val, val_files = read_batches(args, "validation", args.eval_batches, False, 0)
    if not val:
        raise DataError(f"--records {args.records!r}: validation/ holds no records")
    # TensorFlow: see the note at the top.
    from albert.data.reader import check_token_ids
    from albert.tasks.losses import pretraining_metrics

    with tempfile.TemporaryDirectory(prefix="reference-pretraining-") as tmp:
        tf, config, model, trainer, reference, optimizer, o = build_both(
            args, settings, os.path.join(tmp, "start"))
    check_token_ids(train_files + val_files, config.vocab_size, args.spm_model)
    ours_val = [{k: tf.constant(v) for k, v in b.items()} for b in val]

    curves = {side: {"evals": [], "train_loss": [], "grad_norm": []}
              for side in ("ours", "reference")}
    lr_diff = 0.0

    def evaluate(step: int) -> None:
        for side, scores in (("ours", pretraining_metrics(trainer.evaluate(ours_val))),
                             ("reference", reference_evaluate(reference, val))):
            c = curves[side]
            since = c["train_loss"][c["evals"][-1]["step"]:step] if c["evals"] else []
            c["evals"].append({"step": step, **{k: scores[k] for k in (
                "mlm_acc", "sop_acc", "mlm_loss", "sop_loss", "loss")},
                "train_loss": float(np.mean(since)) if since else None})
        print(row(curves["ours"]["evals"][-1], curves["reference"]["evals"][-1]), flush=True)

    timing = {"ours_s": 0.0, "reference_s": 0.0}
    print(HEADER, flush=True)
    evaluate(0)
    for step, batch in enumerate(train):
        t0 = time.time()
        result = trainer.train_step({k: tf.constant(v[None]) for k, v in batch.items()})
        ours_loss = pretraining_metrics(trainer.pop_sums())["loss"]
        curves["ours"]["train_loss"].append(ours_loss)
        curves["ours"]["grad_norm"].append(float(trainer.grad_norm))
        t1 = time.time()
        lr = reference_learning_rate(step, args.learning_rate, o.warmup(args.steps), args.steps)
        ref_loss, ref_norm = reference_update(reference, optimizer, batch, lr, o.max_grad_norm)
        curves["reference"]["train_loss"].append(ref_loss)
        curves["reference"]["grad_norm"].append(ref_norm)
        timing["ours_s"] += t1 - t0
        timing["reference_s"] += time.time() - t1
        # max() would pass over a NaN difference (every comparison with it is false).
        diff = abs(float(result["learning_rate"]) - lr)
        lr_diff = max(lr_diff, diff) if math.isfinite(diff) else math.inf
        done = step + 1
        if done % args.eval_every == 0 or done == len(train):
            evaluate(done)

    return report(args, curves, lr_diff, val, settings,
                  {"wall": time.time() - started, **{k: round(v, 1) for k, v in timing.items()}})


def report(args, curves, lr_diff, val, settings, seconds) -> int:
    """--output and the closing lines; the exit status: 0 when both sides trained to finite
    losses, 1 when either diverged (then there is no agreement to report)."""
    result = summarize(args, curves, lr_diff, val, settings)
    result["seconds"] = seconds
    write_json(args.output, result)
    print(closing_lines(result), flush=True)
    return 1 if result["diverged"] else 0


def first_non_finite(curve: dict) -> str | None:
    """Where a side's losses stop being numbers ("update 3", "evaluation at step 10"); None
    while every one is finite."""
    for update, loss in enumerate(curve["train_loss"], start=1):
        if loss is None or not math.isfinite(loss):
            return f"update {update} (training loss {loss})"
    for e in curve["evals"]:
        for key in ("loss", "mlm_loss", "sop_loss"):
            if e[key] is None or not math.isfinite(e[key]):
                return f"the evaluation at step {e['step']} ({key} {e[key]})"
    return None


def finite_or_null(value):
    """`value` with every non-finite float as null: JSON has no NaN or Infinity."""
    if isinstance(value, dict):
        return {k: finite_or_null(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [finite_or_null(v) for v in value]
    if isinstance(value, float | np.floating) and not math.isfinite(value):
        return None
    return value


def write_json(path: str, result: dict) -> None:
    with open(path, "w") as f:
        json.dump(finite_or_null(result), f, indent=1, allow_nan=False)
        f.write("\n")


def summarize(args, curves, lr_diff, val, settings) -> dict:
    tokens = int(sum(float(b["masked_lm_weights"].sum()) for b in val))
    sequences = sum(len(b["input_ids"]) for b in val)
    ours, ref = curves["ours"]["evals"][-1], curves["reference"]["evals"][-1]
    p = (ours["mlm_acc"] + ref["mlm_acc"]) / 2
    se = math.sqrt(max(p * (1 - p), 1e-12) / max(tokens, 1))
    gaps = [a["mlm_acc"] - b["mlm_acc"] for a, b in zip(curves["ours"]["evals"],
                                                         curves["reference"]["evals"],
                                                         strict=True)]
    spread = {side: float(np.std([e["mlm_acc"] for e in c["evals"][-LAST_POINTS:]]))
              for side, c in curves.items()}
    diverged = {side: where for side, where in ((side, first_non_finite(c))
                                                for side, c in curves.items()) if where}
    return {
        "diverged": diverged,
        "config": vars(args),
        "pipeline_settings": settings,
        "eval_tokens": tokens, "eval_sequences": sequences,
        "first_update_loss": {side: c["train_loss"][0] for side, c in curves.items()},
        "learning_rate_max_abs_diff": lr_diff,
        **curves,
        "noise": {
            # Two independent runs' accuracies on these tokens differ by sqrt(2) x this by
            # sampling alone; the same tokens on both sides make it an upper scale.
            "mlm_acc_binomial_se": se,
            "last_points_std": spread,
            "final_mlm_acc_gap": gaps[-1],
            "final_gap_in_se": gaps[-1] / (math.sqrt(2) * se),
            "mean_gap_last_points": float(np.mean(gaps[-LAST_POINTS:])),
            "max_abs_gap": float(max(abs(g) for g in gaps)),
        },
    }


HEADER = (f"{'step':>6} {'MLM ours':>9} {'MLM ref':>9} {'gap':>8} {'SOP ours':>9} "
          f"{'SOP ref':>8} {'train loss ours':>16} {'ref':>7}")


def row(ours: dict, ref: dict) -> str:
    """One evaluation of both sides: a line of the table under HEADER."""
    fmt = lambda x: f"{x:.3f}" if x is not None else "-"  # noqa: E731
    return (f"{ours['step']:>6} {ours['mlm_acc']:>9.4f} {ref['mlm_acc']:>9.4f} "
            f"{ours['mlm_acc'] - ref['mlm_acc']:>+8.4f} {ours['sop_acc']:>9.4f} "
            f"{ref['sop_acc']:>8.4f} {fmt(ours['train_loss']):>16} {fmt(ref['train_loss']):>7}")


def closing_lines(result) -> str:
    diverged = result["diverged"]
    if diverged:
        # A diverged run agrees with nothing: its gaps are NaN, and max() and the formats would
        # show them as agreement.
        where = "; ".join(f"{side} at {at}" for side, at in diverged.items())
        if len(diverged) == 2:
            advice = (f"both did: lower --learning_rate (now "
                      f"{result['config']['learning_rate']:g}) or raise --warmup_steps")
        else:
            [other] = set(result["first_update_loss"]) - set(diverged)
            advice = f"the {other} side did not: the two trainers disagree"
        return (f"diverged: {where}; no comparison ({advice})\n"
                f"wall {result['seconds']['wall']:.0f} s")
    lines = []
    n = result["noise"]
    first = result["first_update_loss"]
    lines.append(f"first update loss: ours {first['ours']:.6f}, reference "
                 f"{first['reference']:.6f}; learning rates differ by at most "
                 f"{result['learning_rate_max_abs_diff']:.2e}")
    lines.append(f"MLM accuracy on {result['eval_tokens']} validation tokens: binomial SE "
                 f"{n['mlm_acc_binomial_se']:.4f}; final gap {n['final_mlm_acc_gap']:+.4f} "
                 f"({n['final_gap_in_se']:+.2f} x the SE of a difference), mean gap of the last "
                 f"{LAST_POINTS} evaluations {n['mean_gap_last_points']:+.4f}; their spread: ours "
                 f"{n['last_points_std']['ours']:.4f}, reference "
                 f"{n['last_points_std']['reference']:.4f}")
    s = result["seconds"]
    lines.append(f"wall {s['wall']:.0f} s (updates: ours {s['ours_s']:.0f} s, reference "
                 f"{s['reference_s']:.0f} s)")
    return "\n".join(lines)


def main(argv=None) -> int:
    return run_main(parse_args, run, argv)


if __name__ == "__main__":
    sys.exit(main())
