"""The toolkit's errors a user can act on. Command-line tools turn each into one "error: ..."
line and exit status 2 (albert.flags.user_errors); anything else is a bug and keeps its
traceback."""

from __future__ import annotations


class AlbertError(Exception):
    """An error the user can fix; the message names the flag, file or value and what was
    expected."""


class FlagError(AlbertError, ValueError):
    """A flag value (or combination) that cannot work."""
