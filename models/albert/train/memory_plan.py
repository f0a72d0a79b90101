"""The memory plan: what one rank of a training run needs, estimated from the config,
sequence length, precision, micro-batch and --recompute before anything is built.

memory_plan adds it up by what holds it (weights, gradients, optimizer slots, allreduce buffers,
activations, the framework's own); largest_fitting finds the largest micro-batch that fits a
budget; `python -m albert.plan` prints that for each preset on given memory sizes (docs/memory.md's
"what fits where" table):

    python -m albert.plan --memory_budget_gb 16 32 80 141 --max_seq_length 128 512

GB here is GiB (2^30 bytes), as nvidia-smi and TensorFlow count device memory.
"""

from __future__ import annotations

from dataclasses import dataclass

from albert.errors import SettingError

# RECOMPUTE_MODES: --recompute's modes, as the model applies them
from albert.model.config import RECOMPUTE_MODES, AlbertConfig
from albert.model.heads import TASKS

GIB = 2 ** 30
HEADS = tuple(TASKS)  # a head is its task's name: pretraining | squad | classification
COMPUTE_BYTES = {"fp32": 4, "fp16": 2, "bf16": 2}
# What the framework itself holds beside the tensors counted below. GPU: the CUDA context and the
# cuBLAS/cuDNN/XLA workspaces (the allocator's peak does not see them). CPU, measured as the peak
# resident memory of a process that ran one update: Python and TensorFlow (0.65 GB) and XLA's
# compilation of the step, which the C allocator keeps and which grows with the number of layer
# applications in the graph (base 1.4 GB, large 1.7 GB in all).
RUNTIME_BYTES = {"gpu": 1 * GIB, "cpu": 1 * GIB}
RUNTIME_CPU_PER_APPLICATION = 0.03 * GIB
# Horovod's fusion buffer (HOROVOD_FUSION_THRESHOLD, 128 MiB by default).
FUSION_BUFFER_BYTES = 128 * 2 ** 20
# --per_gpu_batch_size auto keeps this share of the memory free: a plan must fit in 90% of the
# budget, a trial step on a GPU must run with 10% more sequences than the micro-batch chosen.
SAFETY_MARGIN = 0.1


def parameter_count(config, head: str = "pretraining", num_labels: int = 2) -> int:
    """Exact trainable parameter count of the model a runner builds (all float32 variables)."""
    if head not in HEADS:
        raise ValueError(f"head must be one of {HEADS}, got {head!r}")
    c = config
    e, h, i = c.embedding_size, c.hidden_size, c.intermediate_size
    embeddings = (c.vocab_size + c.max_position_embeddings + c.type_vocab_size) * e + 2 * e
    layer = 4 * h * h + 2 * h * i + 9 * h + i
    encoder = e * h + h + c.num_hidden_groups * c.inner_group_num * layer
    encoder += 2 * h if c.pre_layer_norm else 0
    if head == "pretraining":
        top = (h * h + h) + (h * e + 3 * e + c.vocab_size) + (2 * h + 2)
    elif head == "squad":
        top = 2 * h + 2
    else:
        top = (h * h + h) + (h * num_labels + num_labels)
    return embeddings + encoder + top


def activation_bytes(config, seq_length: int, micro_batch: int, precision: str = "fp32",
                     recompute: str = "none", max_predictions: int = 20,
                     head: str = "pretraining") -> int:
    """Bytes alive at the peak of one micro-batch's forward + backward pass, beyond the weights,
    their gradients and the optimizer slots.

    Per transformer layer application, with T = B x S tokens, c = bytes of the compute dtype and
    A = B x N x S x S attention scores, the forward pass keeps for the backward pass:
        T x H x (5c + 12)   the matmul inputs (x, q, k, v, context), the float32 LayerNorm inputs
                            and the residual stream
        T x I x 3c          the FFN pre-activation, its GELU intermediate and output
        A x (4 + c')        the float32 softmax output (and its compute-dtype copy below fp32)
        T x 16              LayerNorm statistics
    and with dropout on, each mask's random bits (4 bytes an element) and the masked attention
    probabilities (A x 4). The peak is at the start of the backward pass: all of that, plus the
    larger of the MLM head's backward (its [B, P, V] logits gradient and the tied decoder's
    [B, V, E] per-sequence gradient) and one layer's activation gradients (T x H x 8 + T x I x 4 +
    A x 4). Without recomputation the tape sums a shared layer's per-application weight gradients
    at the end of the backward pass, so the peak may come there instead: one full copy of the
    layer's weights per application.

    With recompute "layers", each application keeps only its input (T x H float32), and the
    backward pass holds one layer's recomputed activations plus one copy of the layer's weights
    (the running gradient sum beside the application's own).

    Calibrated on XLA's buffer assignment for the CPU (base, large, xlarge, xxlarge at sequence
    128 and 512) and checked against measured peak memory: see docs/memory.md.
    """
    if recompute not in RECOMPUTE_MODES:
        raise SettingError(f"{{recompute}} must be one of {RECOMPUTE_MODES}, got {recompute!r}",
                           "recompute")
    c = COMPUTE_BYTES[precision]
    cfg = config
    b, s = micro_batch, seq_length
    t, h, i, e, v = b * s, cfg.hidden_size, cfg.intermediate_size, cfg.embedding_size, \
        cfg.vocab_size
    scores = b * cfg.num_attention_heads * s * s
    hidden_dropout = cfg.hidden_dropout_prob > 0
    attention_dropout = cfg.attention_probs_dropout_prob > 0
    kept = (t * h * (5 * c + 12 + (8 if hidden_dropout else 0))
            + t * i * 3 * c
            + scores * (4 + (c if c < 4 else 0) + (8 if attention_dropout else 0))
            + t * 16)
    working = t * h * 8 + t * i * 4 + scores * 4
    embeddings = t * e * 12
    head_backward = b * max_predictions * v * 8 + b * v * e * 4 if head == "pretraining" else 0
    applications = cfg.num_hidden_layers * cfg.inner_group_num
    per_distinct = applications // (cfg.num_hidden_groups * cfg.inner_group_num)
    layer_weights = (4 * h * h + 2 * h * i + 9 * h + i) * 4
    if recompute == "none":
        start = applications * kept + max(head_backward, working)
        end = per_distinct * layer_weights * cfg.inner_group_num + kept
        return embeddings + max(start, end)
    return embeddings + applications * t * h * 4 + max(head_backward, kept + layer_weights)


def runtime_bytes(config, device: str) -> int:
    """The framework's own memory on `device` (see RUNTIME_BYTES)."""
    runtime = RUNTIME_BYTES[device]
    if device == "cpu":
        runtime += RUNTIME_CPU_PER_APPLICATION * config.num_hidden_layers * config.inner_group_num
    return int(runtime)


@dataclass(frozen=True)
class MemoryPlan:
    """Estimated peak memory of one rank, in bytes, by what holds it."""
    weights: int
    gradients: int
    optimizer: int
    allreduce: int
    activations: int
    runtime: int
    micro_batch: int
    seq_length: int
    precision: str
    recompute: str
    device: str

    @property
    def total(self) -> int:
        return (self.weights + self.gradients + self.optimizer + self.allreduce
                + self.activations + self.runtime)

    def describe(self) -> str:
        def gb(n):
            return f"{n / GIB:.2f}"

        return (f"memory plan: {gb(self.total)} GB per {self.device.upper()} = weights "
                f"{gb(self.weights)} + gradients {gb(self.gradients)} + optimizer slots "
                f"{gb(self.optimizer)} + allreduce {gb(self.allreduce)} + activations "
                f"{gb(self.activations)} (micro-batch {self.micro_batch} at sequence length "
                f"{self.seq_length}, {self.precision}, recompute {self.recompute}) + runtime "
                f"{gb(self.runtime)}")

    def as_dict(self) -> dict:
        return {"weights": self.weights, "gradients": self.gradients,
                "optimizer": self.optimizer, "allreduce": self.allreduce,
                "activations": self.activations, "runtime": self.runtime, "total": self.total,
                "micro_batch": self.micro_batch, "seq_length": self.seq_length,
                "precision": self.precision, "recompute": self.recompute, "device": self.device}


def memory_plan(config, seq_length: int, micro_batch: int, *, precision: str = "fp32",
                recompute: str = "none", ranks: int = 1, accumulation: int = 1,
                fp16_allreduce: bool = False, max_predictions: int = 20,
                head: str = "pretraining", num_labels: int = 2,
                device: str = "gpu") -> MemoryPlan:
    """The memory one rank needs for a run (see MemoryPlan).

    Weights, gradients and the optimizer's two slots (m and v of LAMB/AdamW) are float32 whatever
    the precision (the Keras mixed policies keep float32 variables). With accumulation the summed
    gradients live beside the micro-batch's own. Across ranks the allreduce holds the averaged
    copy of the gradients and Horovod's fusion buffer (and fp16 copies with --fp16_allreduce).
    """
    if precision not in COMPUTE_BYTES:
        raise SettingError(f"{{precision}} must be one of {sorted(COMPUTE_BYTES)}, got "
                           f"{precision!r}", "precision")
    if device not in RUNTIME_BYTES:
        raise ValueError(f"device must be one of {sorted(RUNTIME_BYTES)}, got {device!r}")
    params = parameter_count(config, head, num_labels)
    weights = params * 4
    gradients = weights * (2 if accumulation > 1 else 1)
    allreduce = 0
    if ranks > 1:
        wire = params * (2 if fp16_allreduce else 4)
        allreduce = weights + min(FUSION_BUFFER_BYTES, wire) + (2 * wire if fp16_allreduce else 0)
    return MemoryPlan(
        weights=weights, gradients=gradients, optimizer=2 * weights, allreduce=allreduce,
        activations=activation_bytes(config, seq_length, micro_batch, precision, recompute,
                                     max_predictions, head),
        runtime=runtime_bytes(config, device), micro_batch=micro_batch, seq_length=seq_length,
        precision=precision, recompute=recompute, device=device)


def plan_fits(plan: MemoryPlan, budget_bytes: float) -> bool:
    """Whether `plan` fits `budget_bytes` with the safety margin."""
    return plan.total <= (1.0 - SAFETY_MARGIN) * budget_bytes


def largest_fitting(config, seq_length: int, budget_bytes: float, *, limit: int = 1 << 16,
                    **plan_args) -> int:
    """The largest micro-batch whose memory_plan(config, seq_length, m, **plan_args) fits
    `budget_bytes` with the safety margin (0 when not even one sequence does)."""
    lo, hi = 0, limit
    while lo < hi:
        mid = (lo + hi + 1) // 2
        fits = plan_fits(memory_plan(config, seq_length, mid, **plan_args), budget_bytes)
        lo, hi = (mid, hi) if fits else (lo, mid - 1)
    return lo


TABLE_LIMIT = 1 << 16  # largest_fitting's search bound: a cell at it means "at least"


def fits_table(sizes, seq_lengths, precisions, memory_gb, *, ranks: int = 8,
               accumulation: int = 2) -> list[str]:
    """Markdown rows: for each preset x sequence length x precision, the largest micro-batch per
    GPU on each memory size, without / with --recompute layers (pretraining, LAMB, `ranks` ranks
    and gradient accumulation, the safety margin of --per_gpu_batch_size auto kept free)."""
    rows = ["| model | seq | precision | " + " | ".join(f"{gb} GB" for gb in memory_gb) + " |",
            "| --- | --- | --- |" + " --- |" * len(memory_gb)]
    for size in sizes:
        config = AlbertConfig.from_preset(size)
        for seq in seq_lengths:
            for precision in precisions:
                cells = []
                for gb in memory_gb:
                    if seq > config.max_position_embeddings:
                        cells.append(f"longer than {size}'s {config.max_position_embeddings} "
                                     "positions")
                        continue
                    largest = [largest_fitting(config, seq, gb * GIB, precision=precision,
                                               recompute=mode, ranks=ranks,
                                               accumulation=accumulation)
                               for mode in RECOMPUTE_MODES]
                    cells.append(" / ".join(str(m) if m < TABLE_LIMIT else f">= {m}"
                                            for m in largest))
                rows.append(f"| {size} | {seq} | {precision} | " + " | ".join(cells) + " |")
    return rows
