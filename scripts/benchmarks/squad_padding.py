"""--squad_padding: SQuAD prediction and fine-tuning with every window padded to
--max_seq_length against windows padded to their batch (scripts/benchmark.py's docstring says
how the set is built and what each key means)."""

from __future__ import annotations

import json
import os
import statistics
import tempfile
import time


def squad_padding_set(args, tmp: str):
    """(tokenizer, dev features, training-cache prefix) of the benchmark's SQuAD set (the
    docstring says how it is built)."""
    import random

    from albert import train_tokenizer
    from albert.data import squad, squad_records
    from albert.data.tokenization import load_tokenizer
    from albert.demo import squad_sample
    from albert.demo.sample import write_corpus

    spm_model = args.spm_model
    if not spm_model:
        write_corpus(os.path.join(tmp, "corpus.txt"))
        spm_model = train_tokenizer.train(train_tokenizer.parse_args([
            "--input", os.path.join(tmp, "corpus.txt"), "--vocab_size", "3000",
            "--output_dir", os.path.join(tmp, "vocab"), "--processes", "1"]))
    tokenizer = load_tokenizer(spm_model)
    data = squad_sample.make_split(squad_sample.passages((5, 20)), args.squad_questions,
                                   "v2.0", seed=1, prefix="bench")
    path = os.path.join(tmp, "squad.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(data, f)
    examples, _, _ = squad.read_squad(path)
    settings = squad.FeatureSettings(args.max_seq_length, 128, 64)
    dev = squad.featurize(examples, tokenizer, settings, training=False)
    squad_records.write_feature_cache(dev, os.path.join(tmp, "dev"))
    train = squad.featurize(examples, tokenizer, settings, training=True)
    random.Random(1).shuffle(train)  # as run_squad caches its training windows
    squad_records.write_feature_cache(train, os.path.join(tmp, "train"))
    return tokenizer, dev, os.path.join(tmp, "dev"), os.path.join(tmp, "train")


def bench_squad_padding(args) -> dict:
    """SQuAD prediction and fine-tuning, padding "max" against padding "batch" (see the
    docstring)."""
    import collections

    import tensorflow as tf

    from albert.data import squad, squad_records
    from albert.model.config import AlbertConfig
    from albert.model.modeling import AlbertForQuestionAnswering
    from albert.tasks.losses import SQUAD_METRICS, squad_loss
    from albert.train import distributed
    from albert.train.optimization import make_optimizer
    from albert.train.precision import set_precision
    from albert.train.run_spec import Execution
    from albert.train.trainer import Trainer
    from albert.train.xla_plan import plan_for_run

    paddings = ("max", "batch")
    seq = args.max_seq_length
    micro, accum = args.per_gpu_batch_size, args.gradient_accumulation_steps
    dist = distributed.init()
    set_precision(args.precision)
    xla = plan_for_run(Execution(precision=args.precision, eager=args.eager,
                                  xla="off" if args.skip_xla else args.xla), dist)
    with tempfile.TemporaryDirectory() as tmp:
        tokenizer, dev, dev_prefix, train_prefix = squad_padding_set(args, tmp)
        lengths = [f.length for f in dev]
        config = AlbertConfig.from_preset(args.model_size, vocab_size=len(tokenizer))
        model = AlbertForQuestionAnswering(config).build_for_config()
        inputs = ("input_ids", "attention_mask", "token_type_ids")

        @tf.function(jit_compile=xla.gradient, reduce_retracing=True)
        def logits(batch):
            out = model({k: batch[k] for k in inputs}, training=False)
            return out["start_logits"], out["end_logits"]

        predict_batches = {p: list(squad_records.prediction_batches(
            dev_prefix, args.squad_predict_batch, seq, p)) for p in paddings}

        def predict(padding):
            for batch in predict_batches[padding]:
                start, _ = logits(batch)
            start.numpy()  # wait for the last batch

        trainer = Trainer(model, squad_loss, make_optimizer("adamw", model.trainable_variables),
                          lambda step: 1e-5, dist, metric_names=SQUAD_METRICS,
                          accum_steps=accum, precision=args.precision, xla=xla)
        trainer.broadcast_state()
        streams = {p: iter(squad_records.training_batches(train_prefix, micro, accum, seq, seed=1,
                                                  padding=p)) for p in paddings}
        widths = {p: collections.Counter() for p in paddings}
        real = {p: 0 for p in paddings}

        def finetune(padding, updates, count=False):
            for _ in range(updates):
                batch = next(streams[padding])
                if count:
                    widths[padding][int(batch["input_ids"].shape[-1])] += 1
                    real[padding] += int(tf.reduce_sum(batch["attention_mask"]))
                trainer.train_step(batch)
            int(trainer.step)  # wait for the last update

        # Compile every shape before timing: a prediction pass, and an update at every length
        # a bucket can have (the first max-padded update cut to it; labels past it -> 0).
        first = next(iter(squad_records.training_batches(train_prefix, micro, accum, seq, seed=2,
                                                 padding="max")))
        for width in sorted({squad.padded_length(n, seq) for n in range(1, seq + 1)}):
            cut = {k: v[..., :width] if v.shape.rank == 3 else v for k, v in first.items()}
            for k in ("start_positions", "end_positions"):
                cut[k] = tf.where(cut[k] < width, cut[k], 0)
            trainer.train_step(cut)
        for padding in paddings:
            predict(padding)
            finetune(padding, args.warmup)
        times = {(what, p): [] for what in ("predict", "finetune") for p in paddings}
        for _ in range(args.repeats):
            for padding in paddings:
                start = time.perf_counter()
                predict(padding)
                times["predict", padding].append(time.perf_counter() - start)
                start = time.perf_counter()
                finetune(padding, args.steps, count=True)
                times["finetune", padding].append(time.perf_counter() - start)
    per_update = micro * accum
    rate = {(what, p): (len(dev) if what == "predict" else args.steps * per_update)
            / statistics.median(times[what, p]) for what, p in times}
    predict_widths = collections.Counter(int(b["input_ids"].shape[1])
                                         for b in predict_batches["batch"])
    share = {}
    for p in paddings:
        positions = sum(int(b["input_ids"].shape[0]) * int(b["input_ids"].shape[1])
                        for b in predict_batches[p])
        trained = sum(w * n * per_update for w, n in widths[p].items())
        share[p] = {"predict": 1 - sum(lengths) / positions, "finetune": 1 - real[p] / trained}
    return {
        "squad_windows": len(dev),
        "squad_padding_share": share,
        "squad_widths": {"predict": dict(sorted(predict_widths.items())),
                         "finetune": dict(sorted(widths["batch"].items()))},
        "squad_predict_seq_per_sec": {p: rate["predict", p] for p in paddings},
        "squad_finetune_seq_per_sec": {p: rate["finetune", p] for p in paddings},
        "squad_predict_speedup": rate["predict", "batch"] / rate["predict", "max"],
        "squad_finetune_speedup": rate["finetune", "batch"] / rate["finetune", "max"],
        "squad_xla": {"gradient": xla.gradient, "update": xla.update, "reason": xla.reason},
    }
