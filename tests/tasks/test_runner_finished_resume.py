"""The same command run again after its run finished (issue 50): the runner's training phase takes
the already-finished path (no update, no second export over the first, a line saying so) instead
of training past --total_steps; a run short of its last update, or a new one, trains."""

import types

import pytest

from albert.tasks import runner
from albert.train.distributed import Distributed


class Rank1(Distributed):
    rank, size = 1, 2


def _train(monkeypatch, how, step, total_steps, dist=None):
    """runner.train with its start and its phases replaced by recorders: which of them ran."""
    ran = []
    trainer = types.SimpleNamespace(step=step)
    run = runner.Training(trainer=trainer, checkpoints=None, plan=None, total_steps=total_steps,
                          examples=None, record={"finished": True}, how=how)
    monkeypatch.setattr(runner, "start", lambda task, model, dist, xla: run)
    monkeypatch.setattr(runner, "log_start", lambda *a: None)
    monkeypatch.setattr(runner, "already_finished", lambda *a: ran.append("already_finished"))
    monkeypatch.setattr(runner, "save_final", lambda *a: ran.append("save_final"))
    monkeypatch.setattr(runner, "mark_finished", lambda *a: ran.append("mark_finished"))

    def updates(*a):
        ran.append("updates")
        trainer.step = total_steps
        return "done"

    monkeypatch.setattr(runner, "updates", updates)
    task = types.SimpleNamespace(evaluations=lambda model, trainer, dist: ["evaluation"],
                                 spec=types.SimpleNamespace(outputs=types.SimpleNamespace(
                                     checkpoint_dir="/nowhere")))
    outcome = runner.train(task, object(), dist or Distributed(), None, None, None)
    return outcome, ran


@pytest.mark.parametrize("step, total", [(8, 8), (9, 8)])
def test_a_resumed_run_at_its_last_update_is_already_finished(monkeypatch, step, total):
    outcome, ran = _train(monkeypatch, "resumed", step, total)
    assert ran == ["already_finished"]  # nothing trained, nothing exported again
    assert outcome == runner.Outcome("finished", step, ["evaluation"])


def test_only_rank_0_says_so_and_every_rank_skips_training(monkeypatch):
    outcome, ran = _train(monkeypatch, "resumed", 8, 8, dist=Rank1())
    assert ran == [] and outcome.status == "finished"


@pytest.mark.parametrize("how, step", [("resumed", 5), ("new", 0), ("initialised", 0)])
def test_a_run_short_of_its_last_update_trains(monkeypatch, how, step):
    outcome, ran = _train(monkeypatch, how, step, 8)
    assert ran == ["updates", "save_final", "mark_finished"]
    assert outcome == runner.Outcome("done", 8, ["evaluation"])
