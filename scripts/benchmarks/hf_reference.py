"""--compare_hf: transformers' PyTorch AlbertForPreTraining doing the same update (forward,
backward, AdamW) at the same shapes and precision, the reference the step's speed is judged
against."""

from __future__ import annotations

import os


def make_hf_step(args):
    """transformers' PyTorch AlbertForPreTraining: forward, backward, AdamW, same shapes.
    Returns run(n), already warmed up."""
    import numpy as np
    import torch
    import transformers

    from albert.model.config import AlbertConfig

    torch.set_num_threads(os.cpu_count() or 1)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    config = AlbertConfig.from_preset(args.model_size, vocab_size=args.vocab_size,
                                      classifier_dropout_prob=0.0)
    model = transformers.AlbertForPreTraining(transformers.AlbertConfig(**config.to_dict()))
    model.to(device).train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    rng = np.random.default_rng(0)
    b = args.per_gpu_batch_size * args.gradient_accumulation_steps
    s = args.max_seq_length
    ids = torch.tensor(rng.integers(5, config.vocab_size, (b, s)))
    labels = torch.full((b, s), -100)
    for row in range(b):
        pos = rng.choice(np.arange(1, s - 1), args.max_predictions_per_seq, replace=False)
        labels[row, pos] = ids[row, pos]
    types = torch.tensor((np.arange(s)[None] >= s // 2).repeat(b, 0).astype(np.int64))
    sop = torch.tensor(rng.integers(0, 2, (b,)))
    ids, labels, types, sop = (t.to(device) for t in (ids, labels, types, sop))
    autocast_dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(args.precision)
    scaler = torch.amp.GradScaler(device, enabled=args.precision == "fp16")

    def step():
        opt.zero_grad(set_to_none=True)
        with torch.autocast(device, dtype=autocast_dtype, enabled=autocast_dtype is not None):
            out = model(input_ids=ids, token_type_ids=types, labels=labels,
                        sentence_order_label=sop)
        scaler.scale(out.loss).backward()
        scaler.step(opt)
        scaler.update()
        if device == "cuda":
            torch.cuda.synchronize()

    def run(n):
        for _ in range(n):
            step()

    run(args.warmup)
    return run
