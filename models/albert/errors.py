"""The toolkit's errors a user can act on: one family under `AlbertError`. Command-line tools
turn each into one "error: ..." line and exit status 2 (albert.cli.flags.user_errors); anything
else, a plain ValueError included, is a bug and keeps its traceback.

    AlbertError
      FlagError         a flag value or combination (ValueError)
      ConfigError       a model config: a field of AlbertConfig, a config.json (ValueError)
      CheckpointError   a checkpoint, run directory or exported model (ValueError)
      DataError         an input file or pattern: names the file (and line) (ValueError)
      OutputError       an output that cannot be written: no space, no directory (OSError)

Modules keep their own names for their kind where callers catch them
(albert.train.batch_plan.PlanError, albert.data.squad.SquadError,
albert.eval.squad_scoring.ScoringInputError, ...): each is a subclass of one of these.
The second base (ValueError, OSError) is what these errors were before the family, so that code
catching it still does. This module imports nothing: every layer may import it.
"""

from __future__ import annotations


class AlbertError(Exception):
    """An error the user can fix; the message names the flag, file or value and what was
    expected."""


class FlagError(AlbertError, ValueError):
    """A flag value (or combination) that cannot work."""


class ConfigError(AlbertError, ValueError):
    """A model config that cannot build a model: the field (or config file) and what it must
    be."""


class CheckpointError(AlbertError, ValueError):
    """A checkpoint, run directory or exported model that cannot be used as asked; the message
    names it and says how to proceed."""


class DataError(AlbertError, ValueError):
    """Input files that cannot be read or used as asked; the message names the pattern or file
    (and line)."""


class OutputError(AlbertError, OSError):
    """An output that cannot be written (a directory that cannot be created, a full disk); the
    message names the flag or file."""
