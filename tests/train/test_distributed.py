"""Data-parallel plumbing (albert.train.distributed): the one-process Distributed is the identity
for every collective, and on_chief makes rank 0's decision, or its refusal, every rank's."""

import pytest

from albert.errors import FlagError
from albert.train.distributed import Distributed, launched_by_horovod, on_chief


def test_one_process_is_rank_0_of_1_and_the_chief():
    dist = Distributed()
    assert (dist.rank, dist.size, dist.local_rank, dist.local_size) == (0, 1, 0, 1)
    assert dist.is_chief


def test_one_process_collectives_are_identities():
    dist = Distributed()
    values = (1.5, [2, 3])
    mean = dist.allreduce_mean(values, fp16_compression=True)
    assert mean == [1.5, [2, 3]] and isinstance(mean, list)
    assert dist.allreduce_sum(iter(values)) == [1.5, [2, 3]]  # a generator is read once
    assert dist.allgather_object({"step": 3}) == [{"step": 3}]
    assert dist.broadcast_variables([object()]) is None
    assert dist.barrier() is None


def test_on_chief_in_one_process_returns_the_value_and_raises_the_refusal():
    dist = Distributed()
    assert on_chief(dist, lambda: {"step": 3}) == {"step": 3}
    with pytest.raises(FlagError, match="--learning_rate"):
        on_chief(dist, lambda: (_ for _ in ()).throw(FlagError("--learning_rate: x")))
    with pytest.raises(KeyError):
        on_chief(dist, lambda: {}["missing"])


def test_a_rank_other_than_0_is_no_chief():
    class Second(Distributed):
        rank, size = 1, 2

    assert not Second().is_chief


@pytest.mark.parametrize("variable", ["HOROVOD_RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK",
                                      "PMIX_RANK"])
def test_the_launchers_environment_says_horovod(variable, monkeypatch):
    for name in ("HOROVOD_RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK"):
        monkeypatch.delenv(name, raising=False)
    assert not launched_by_horovod()
    monkeypatch.setenv(variable, "0")
    assert launched_by_horovod()


def test_a_refusal_on_rank_0_stops_every_rank():
    """distributed.on_chief: what rank 0 decides (a run directory's lock, the recorded run) is
    every rank's, and so is its refusal; the other ranks would otherwise wait at the next
    collective operation for a rank that has stopped."""
    from albert.errors import AlbertError, FlagError
    from albert.train.distributed import Distributed, on_chief

    class Rank(Distributed):
        size = 2

        def __init__(self, rank, shared):
            self.rank, self.shared = rank, shared

        def allgather_object(self, obj):
            self.shared[self.rank] = obj
            return [self.shared.get(0), obj]

    shared = {}
    with pytest.raises(FlagError, match="learning_rate"):
        on_chief(Rank(0, shared), lambda: (_ for _ in ()).throw(FlagError("learning_rate: x")))
    called = []
    with pytest.raises(AlbertError, match="rank 0: learning_rate: x"):
        on_chief(Rank(1, shared), lambda: called.append(1))
    assert not called  # only rank 0 decides
    assert on_chief(Rank(0, {}), lambda: "spec") == "spec"
    shared = {}
    on_chief(Rank(0, shared), lambda: {"step": 3})
    assert on_chief(Rank(1, shared), lambda: None) == {"step": 3}
    # A bug on rank 0 is no user error on the others.
    shared = {}
    with pytest.raises(KeyError):
        on_chief(Rank(0, shared), lambda: {}["missing"])
    with pytest.raises(RuntimeError, match="rank 0 failed"):
        on_chief(Rank(1, shared), lambda: None)
