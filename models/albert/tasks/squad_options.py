"""What SQuAD is, said without TensorFlow: its options (SquadOptions), the windows and versions
run_squad's flags offer, the scores it reports, the task's declaration (its name, what it logs,
its published rate) and the rule that tells a fine-tune that learned nothing from the all-empty
answers. run_squad, answer, squad_eval and the demo read them at their start; albert.tasks.squad
computes."""

from __future__ import annotations

import dataclasses
import math

from albert.model.heads import TASKS
from albert.tasks import LOOP_LOGGED, Task
from albert.train.run_spec import TaskOptions, identity_field

VERSIONS = {"squadv1": "v1.1", "squadv2": "v2.0"}  # --squad_version -> the files' version
WINDOWS = {"max_seq_length": 384, "doc_stride": 128, "max_query_length": 64}
REPORTED = TASKS["squad"].reported
# What losses.squad_metrics makes of the training sums.
TRAINING_METRICS = TASKS["squad"].trained

# Where a score stands against answering every question with nothing (against_empty_answers).
AT_EMPTY = "at the all-empty answers"
BELOW_EMPTY = "below the all-empty answers"


def empty_answer_noise(total: int) -> float:
    """Two standard errors of a share of `total` questions at its widest (a coin's), in F1
    points: a score closer than this to the all-empty answers' is not told apart from it."""
    return 100 / math.sqrt(total)


def against_empty_answers(f1: float, answerable_f1: float, empty_f1: float,
                          total: int) -> str | None:
    """The one rule, for the run's summary (SquadTask) and the demo's report
    (albert.demo.report), of a fine-tune that did not learn to answer. AT_EMPTY: F1 within the
    noise (empty_answer_noise) of the all-empty answers' either way, and the answerable
    questions' F1 (v1.1: every question's) no better than that noise: it learned at most to
    abstain. BELOW_EMPTY: F1 lower than the all-empty answers' by more than the noise:
    answering nothing would score more, so it answers questions it should leave empty, and
    wrongly. None: neither."""
    noise = empty_answer_noise(total)
    # Two-sided on purpose: far below the all-empty F1 is not "its" score, it is worse.
    if abs(f1 - empty_f1) <= noise and answerable_f1 <= noise:
        return AT_EMPTY
    if f1 < empty_f1 - noise:
        return BELOW_EMPTY
    return None


@dataclasses.dataclass(frozen=True, kw_only=True)
class SquadOptions(TaskOptions):
    """The windows, how they are batched and the SQuAD version decide the run; how answers are
    picked and how many windows an evaluation batch holds do not. squad_version is the files'
    spelling ("v1.1", "v2.0"): --squad_version, else (None) each file's own; a training run
    records its training file's."""
    max_seq_length: int = identity_field(WINDOWS["max_seq_length"])
    doc_stride: int = identity_field(WINDOWS["doc_stride"])
    max_query_length: int = identity_field(WINDOWS["max_query_length"])
    # batch: each update holds windows of one length bucket (seeded, shuffled across buckets),
    # so it decides which windows train together, and belongs to the run; max: every window
    # padded to max_seq_length. (A classifier's padding changes only the pad width.)
    padding: str = identity_field("batch")
    squad_version: str | None = identity_field(None)
    # --squad_version as given (None: each file's own), kept when a training run's file settles
    # squad_version: the file a run predicts is read and scored by its own version's rules
    # unless the flag said which.
    version_flag: str | None = None
    n_best_size: int = 20
    max_answer_length: int = 30
    null_score_diff_threshold: float = 0.0
    eval_batch_size: int = 64


class SquadDeclaration(Task):
    """What a SQuAD run says once (albert.tasks.Task); albert.tasks.squad.SquadTask computes it."""

    name = "squad"
    unit = "features"
    exports = True
    reported = REPORTED
    logged = {"train": TRAINING_METRICS + LOOP_LOGGED, "eval": REPORTED}
    learning_rate = 3e-5  # ALBERT's SQuAD v2.0 rate (google-research/albert run_squad_v2)
