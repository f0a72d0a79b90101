"""--profile: trace the update with the TensorFlow profiler and say which op types take its
time, TensorFlow's and, read from the raw trace, XLA's (xprof's tables see an XLA cluster only
as idle time)."""

from __future__ import annotations

import json
import os
import re


def profile_steps(run_steps, steps: int, logdir: str, xla_compiled: bool) -> dict:
    """Trace `steps` updates and say where their time went.

    TensorFlow ops come from xprof's framework_op_stats (self time by op type). That table
    cannot see inside an XLA cluster: the whole compiled gradient shows up as "IDLE". XLA's CPU
    runtime does record one trace event per HLO thunk (each carries an `hlo_op` stat), so those
    are read from the raw trace and summed by HLO instruction kind ("XLA:dot", "XLA:MatMul",
    "XLA:add_multiply_fusion", ...) and by compiled module. Shares are of the traced op time
    (TensorFlow ops' self time + XLA thunks' self time, summed over threads); TensorFlow's IDLE is
    left out of the table (it is either idle threads or XLA time counted twice) and reported
    as profile_coverage.tensorflow_idle_ms_per_step. Where XLA compiled part of the step but the
    trace holds no HLO events for it, profile_not_covered says so instead of leaving a table
    that silently misses that work.
    """
    import glob

    import tensorflow as tf
    from xprof.convert import raw_to_tool_data

    tf.profiler.experimental.start(logdir)
    try:
        run_steps(steps)
    finally:
        tf.profiler.experimental.stop()
    planes = sorted(glob.glob(os.path.join(logdir, "**", "*.xplane.pb"), recursive=True))[-1:]
    data, _ = raw_to_tool_data.xspace_to_tool_data(planes, "framework_op_stats", {})
    table = json.loads(data)
    table = table[0] if isinstance(table, list) else table
    cols = [c["id"] for c in table["cols"]]
    kind, self_us = cols.index("type"), cols.index("total_self_time")
    tf_ops: dict[str, float] = {}
    for row in table["rows"]:
        cells = [(c or {}).get("v") for c in row["c"]]
        tf_ops[cells[kind]] = tf_ops.get(cells[kind], 0.0) + cells[self_us]
    idle_us = tf_ops.pop("IDLE", 0.0)
    xla_ops, xla_modules = xla_thunk_times(planes[0])
    ops = [(k, v, "tensorflow") for k, v in tf_ops.items()]
    ops += [(f"XLA:{k}", v, "xla") for k, v in xla_ops.items()]
    total = sum(v for _, v, _ in ops) or 1.0
    top = sorted(ops, key=lambda op: -op[1])[:15]
    xla_us = sum(xla_ops.values())
    out = {
        "profile_dir": logdir,
        "profile_top_ops": [{"type": k, "source": source, "self_time_ms_per_step": v / 1e3 / steps,
                             "share": v / total} for k, v, source in top],
        "profile_xla_modules": [
            {"module": k, "step_function": _step_function(k), "ms_per_step": v / 1e3 / steps,
             "share": v / total}
            for k, v in sorted(xla_modules.items(), key=lambda kv: -kv[1])],
        "profile_coverage": {
            "tensorflow_ops_ms_per_step": sum(tf_ops.values()) / 1e3 / steps,
            "xla_ops_ms_per_step": xla_us / 1e3 / steps,
            "xla_share": xla_us / total,
            "tensorflow_idle_ms_per_step": idle_us / 1e3 / steps,
        },
    }
    if xla_compiled and not xla_us:
        out["profile_not_covered"] = (
            "XLA-compiled step functions left no HLO events in this trace, so their time is "
            "missing from profile_top_ops; dump the compiled HLO with XLA_FLAGS="
            "--xla_dump_to=DIR and read the per-kernel timeline in xprof's trace viewer")
    return out


def _step_function(module: str) -> str:
    """XLA module 'a_inference__grads_4543__.126' -> the traced function '_grads'."""
    found = re.search(r"inference_(\w+?)_\d+__", module)
    return found.group(1) if found else module


def _hlo_kind(name: str) -> str:
    """'MatMul_1.82' -> 'MatMul', 'add_multiply_fusion.19' -> 'add_multiply_fusion'."""
    base = re.sub(r"\.\d+$", "", name)
    return re.sub(r"_\d+$", "", base)


def xla_thunk_times(xplane_path: str) -> tuple[dict, dict]:
    """Self time (microseconds, summed over threads) of the XLA HLO thunks in one trace file, by
    HLO instruction kind and by compiled module. A thunk that contains others (a conditional, a
    while loop) is charged only for the time its children do not cover."""
    from tensorflow.tsl.profiler.protobuf import xplane_pb2

    space = xplane_pb2.XSpace()
    with open(xplane_path, "rb") as f:
        space.ParseFromString(f.read())
    by_kind: dict[str, float] = {}
    by_module: dict[str, float] = {}
    for plane in space.planes:
        stat_names = {i: m.name for i, m in plane.stat_metadata.items()}
        for line in plane.lines:
            events = []
            for event in line.events:
                stats = {stat_names.get(s.metadata_id): s for s in event.stats}
                if "hlo_op" not in stats:
                    continue
                module = stats.get("hlo_module")
                module_name = (plane.stat_metadata[module.ref_value].name
                               if module is not None and module.ref_value else "?")
                name = plane.event_metadata[event.metadata_id].name
                events.append((event.offset_ps, event.offset_ps + event.duration_ps, name,
                               module_name))
            events.sort(key=lambda e: (e[0], -e[1]))
            # Self time: subtract each event's span from its innermost enclosing event.
            self_ps = [end - start for start, end, _, _ in events]
            stack: list[int] = []
            for i, (start, end, _, _) in enumerate(events):
                while stack and events[stack[-1]][1] <= start:
                    stack.pop()
                if stack:
                    self_ps[stack[-1]] -= end - start
                stack.append(i)
            for (_, _, name, module_name), ps in zip(events, self_ps, strict=True):
                us = max(ps, 0) / 1e6
                by_kind[_hlo_kind(name)] = by_kind.get(_hlo_kind(name), 0.0) + us
                by_module[module_name] = by_module.get(module_name, 0.0) + us
    return by_kind, by_module
