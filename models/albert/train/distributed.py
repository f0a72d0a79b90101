"""Data-parallel plumbing: the one module that imports Horovod.

`init()` returns a `Distributed` whose methods are no-ops for a single process, so the trainers
never branch on whether Horovod is there. Under `horovodrun`/`mpirun` (detected from the launcher's
environment) Horovod is required and a missing install is a clear error.

Horovod and TensorFlow are imported where a run uses them (init): the command-line tools read
launched_by_horovod and on_chief from here and answer --plan_only without TensorFlow.
"""

from __future__ import annotations

import os

from albert.errors import AlbertError, SettingError

_LAUNCHER_VARS = ("HOROVOD_RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK")


def launched_by_horovod() -> bool:
    return any(v in os.environ for v in _LAUNCHER_VARS)


class Distributed:
    """rank/size and the collectives the trainers need, for one process."""

    rank = 0
    size = 1
    local_rank = 0
    local_size = 1

    @property
    def is_chief(self) -> bool:
        return self.rank == 0

    def allreduce_mean(self, tensors, fp16_compression: bool = False):
        return list(tensors)

    def allreduce_sum(self, tensors):
        return list(tensors)

    def broadcast_variables(self, variables, root_rank: int = 0) -> None:
        pass

    def allgather_object(self, obj) -> list:
        return [obj]

    def barrier(self) -> None:
        pass


class HorovodDistributed(Distributed):
    def __init__(self):
        # Horovod (optional) only under a launcher; TensorFlow: see the module's docstring.
        import horovod.tensorflow as hvd
        import tensorflow as tf

        hvd.init()
        self.hvd, self.tf = hvd, tf
        self.rank, self.size = hvd.rank(), hvd.size()
        self.local_rank, self.local_size = hvd.local_rank(), hvd.local_size()

    def allreduce_mean(self, tensors, fp16_compression: bool = False):
        if self.size == 1:
            return list(tensors)
        compression = (self.hvd.Compression.fp16 if fp16_compression
                       else self.hvd.Compression.none)
        return self.hvd.grouped_allreduce(list(tensors), op=self.hvd.Average,
                                          compression=compression)

    def allreduce_sum(self, tensors):
        if self.size == 1:
            return list(tensors)
        return self.hvd.grouped_allreduce(list(tensors), op=self.hvd.Sum)

    def broadcast_variables(self, variables, root_rank: int = 0) -> None:
        # hvd.broadcast_variables needs tf.Variable.ref(), which Keras 3 variables lack; broadcast
        # the values and assign them instead.
        if self.size == 1:
            return
        for var in variables:
            var.assign(self.hvd.broadcast(self.tf.convert_to_tensor(var), root_rank=root_rank))

    def allgather_object(self, obj) -> list:
        if self.size == 1:
            return [obj]
        return self.hvd.allgather_object(obj)

    def barrier(self) -> None:
        if self.size > 1:
            self.hvd.allreduce(self.tf.constant(0.0), name="barrier")


def on_chief(dist: Distributed, fn):
    """fn() on rank 0 and its result on every rank. An error there is raised on every rank (the
    user's errors with rank 0's message): the others would otherwise wait at the next collective
    operation for a rank that has stopped."""
    result = error = None
    if dist.is_chief:
        try:
            result = fn()
        except Exception as e:  # noqa: BLE001 - re-raised below, on every rank
            error = e
    if dist.size == 1:
        if error is not None:
            raise error
        return result
    # A SettingError goes as its message's template, so that every rank names the setting as
    # rank 0 does (a flag on the command line); any other error as its text.
    message = (None if error is None else error.template if isinstance(error, SettingError)
               else str(error))
    settings = error.settings if isinstance(error, SettingError) else ()
    shared = dist.allgather_object((result, message, isinstance(error, AlbertError),
                                    settings))[0]
    if error is not None:
        raise error
    if shared[1] is not None:
        if shared[3]:
            raise SettingError(f"rank 0: {shared[1]}", *shared[3])
        if shared[2]:
            raise AlbertError(f"rank 0: {shared[1]}")
        raise RuntimeError(f"rank 0 failed: {shared[1]}")
    return shared[0]


def init() -> Distributed:
    """Horovod when started by horovodrun/mpirun, else a single process: the launcher decides,
    so the same command runs on one GPU or many without a flag to keep in step with it."""
    if not launched_by_horovod():
        dist = Distributed()
    else:
        try:
            dist = HorovodDistributed()
        except ImportError as e:
            raise RuntimeError(
                "this process was started by horovodrun/mpirun but Horovod is not installed "
                f"in this environment ({e}); run scripts/setup.sh"
            ) from None
    _pin_gpu(dist.local_rank)
    return dist


def _pin_gpu(local_rank: int) -> None:
    """One GPU per process (the usual Horovod layout); memory grows as needed."""
    import tensorflow as tf  # see the module's docstring

    gpus = tf.config.list_physical_devices("GPU")
    if not gpus:
        return
    gpu = gpus[local_rank % len(gpus)]
    try:
        tf.config.set_visible_devices(gpu, "GPU")
        tf.config.experimental.set_memory_growth(gpu, True)
    except RuntimeError:
        pass  # already initialised (e.g. a second init in one process)
