"""The toolkit's errors a user can act on: one family under `AlbertError`. Command-line tools
turn each into one "error: ..." line and exit status 2 (albert.cli.flags.user_errors); anything
else, a plain ValueError included, is a bug and keeps its traceback.

    AlbertError
      SettingError      a setting's value or combination, named as the library spells it: a
                        Python argument, a RunSpec field, a config key (ValueError)
        FlagError       the same raised by the command line, its message spelled in flags
      ConfigError       a model config: a field of AlbertConfig, a config.json (ValueError)
      CheckpointError   a checkpoint, run directory or exported model (ValueError)
      DataError         an input file or pattern: names the file (and line) (ValueError)
      OutputError       an output that cannot be written: no space, no directory (OSError)

Modules keep their own names for their kind where callers catch them
(albert.train.batch_plan.PlanError, albert.data.squad.SquadError,
albert.eval.squad_scoring.ScoringInputError, ...): each is a subclass of one of these.
A library module raises SettingError, never FlagError: its caller may never have typed a flag
(`albert.train.memory...`, `save_pretrained(...)`). The command-line layer shows it as the
command line spells it (SettingError.on_command_line: `--name`), so a command's line is the
same whichever layer refused the value.
The second base (ValueError, OSError) is what these errors were before the family, so that code
catching it still does. This module imports nothing: every layer may import it.
"""

from __future__ import annotations


class AlbertError(Exception):
    """An error the user can fix; the message names the flag, file or value and what was
    expected."""


class SettingError(AlbertError, ValueError):
    """A setting's value (or combination) that cannot work, named as the library spells it.

    `message` marks each setting it names as `{name}`, and `settings` lists them: a name, or a
    (name, flag) pair where the command line calls it otherwise (accum_steps is
    --gradient_accumulation_steps). The first is `.setting`, the one refused. str() names each
    as the library does (`max_seq_length must be at least 8`), on_command_line() as its flag
    (`--max_seq_length must be at least 8`): the command-line layer's spelling of the same
    mistake. Only the listed marks are replaced, so a value holding braces is left as it is."""

    def __init__(self, message: str, *settings: str | tuple[str, str]):
        self.template = message
        self.settings = tuple((s, s) if isinstance(s, str) else tuple(s) for s in settings)
        self.setting = self.settings[0][0] if self.settings else None
        super().__init__(self._spelled(lambda name, flag: name))

    def on_command_line(self) -> str:
        """The message with each setting named as its flag, `--name`."""
        return self._spelled(lambda name, flag: f"--{flag}")

    def _spelled(self, spell) -> str:
        text = self.template
        for name, flag in self.settings:
            text = text.replace("{" + name + "}", spell(name, flag))
        return text

    def __reduce__(self):
        # Pickled (a rank's error sent to the others) as it was made, both spellings kept.
        return type(self), (self.template, *self.settings)


class FlagError(SettingError):
    """A flag value (or combination) that cannot work, raised by the command line (albert.cli,
    the commands) and phrased in its flags already: a SettingError named no other way."""


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
