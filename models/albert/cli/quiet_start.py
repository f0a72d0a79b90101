"""What a command prints before its own first line. TensorFlow writes C++ start-up lines to the
process's stderr (file descriptor 2) while it imports, before any log level applies ("All log
messages before absl::InitializeLog()...", "oneDNN custom operations are on..."): noise for this
toolkit's users, so TensorFlow is imported with file descriptor 2 captured in a temporary file.
What that hides can still be seen:

- an import that fails prints what it wrote (the real start-up error: a CUDA library that will
  not load, a missing symbol) before its Python error, instead of losing it;
- ALBERT_SHOW_START_UP=1 captures nothing: every line as TensorFlow writes it, a crash inside
  the import included, and no more than that;
- --verbose, which every command takes, captures nothing either, and turns TensorFlow's own
  logging up too (TF_CPP_MIN_LOG_LEVEL=0).
"""

from __future__ import annotations

import importlib.util
import os
import sys
import tempfile

SHOW = "ALBERT_SHOW_START_UP"


class QuietImport:
    """A meta-path finder that imports `name` (once) with file descriptor 2 captured: on
    success what it wrote is dropped, on failure it is written to stderr before the error
    propagates."""

    def __init__(self, name: str = "tensorflow"):
        self.name = name

    def find_spec(self, name, path=None, target=None):
        if name != self.name:
            return None
        sys.meta_path.remove(self)  # once; and let the real finders find it
        spec = importlib.util.find_spec(name)
        if spec is None or spec.loader is None:
            return spec
        real = spec.loader.exec_module

        def exec_module(module):
            sys.stderr.flush()
            saved = os.dup(2)
            with tempfile.TemporaryFile() as hidden:
                os.dup2(hidden.fileno(), 2)
                try:
                    real(module)
                except BaseException:
                    os.dup2(saved, 2)
                    hidden.seek(0)
                    os.write(2, hidden.read())
                    raise
                finally:
                    os.dup2(saved, 2)
                    os.close(saved)

        spec.loader.exec_module = exec_module
        return spec


def quiet_start(verbose: bool, module: str = "tensorflow") -> None:
    """TensorFlow's and transformers' start-up noise silenced, unless --verbose (`verbose`),
    ALBERT_SHOW_START_UP=1, or the user set TensorFlow's variable themselves. `module`: the one
    whose import is captured (another stands in for TensorFlow in the tests)."""
    if verbose or os.environ.get("TF_CPP_MIN_LOG_LEVEL", "2") not in ("1", "2", "3"):
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "0")
        return
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    # "Token indices sequence length is longer than the specified maximum": windowing follows.
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    if os.environ.get(SHOW, "") not in ("", "0"):
        return
    if module not in sys.modules and not any(isinstance(f, QuietImport) and f.name == module
                                             for f in sys.meta_path):
        sys.meta_path.insert(0, QuietImport(module))


def quiet_argv(argv=None) -> list[str]:
    """A command's arguments (sys.argv[1:] by default) without --verbose, which every command
    takes, after quiet_start for it: what each main() does first."""
    argv = list(sys.argv[1:] if argv is None else argv)
    quiet_start("--verbose" in argv)
    return [a for a in argv if a != "--verbose"]
