"""An evaluation of a run: a task's scoring of the model, when it runs and what it last gave. The
one shape every evaluation has, from the task that defines it (albert.tasks) through the training
loop that runs it every `frequency` updates (albert.train.loop.fit) to the end of the run
(albert.tasks.runner), which scores the final model once."""

from __future__ import annotations

from collections.abc import Callable


class Evaluation:
    """run(xla, step) -> scores (a dict; None or {} on a rank that does not score), logged under
    `prefix` every `frequency` updates of training (0: at the end only) and once at the end.
    `keeps_best`: --keep_best reads these scores. The last scores are kept with their step, so
    the end of a run that evaluated at its last update does not score the same model again."""

    def __init__(self, prefix: str, frequency: int, run: Callable, keeps_best: bool = False):
        self.prefix, self.frequency, self.run, self.keeps_best = prefix, frequency, run, keeps_best
        self.step = self.scores = None

    def __call__(self, xla: bool, step: int) -> dict | None:
        self.step, self.scores = step, self.run(xla, step)
        return self.scores

    def due(self, step: int, total_steps: int) -> bool:
        """Whether training evaluates after update `step`; never at the last, which the end of
        the run scores."""
        return bool(self.frequency) and step % self.frequency == 0 and step < total_steps

    def final(self, xla: bool, step: int) -> dict | None:
        """The scores of the model at `step`: those already taken there, else taken now."""
        if self.step != step:
            self(xla, step)
        return self.scores
