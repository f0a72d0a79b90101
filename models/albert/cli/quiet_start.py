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

The same import skips what no command uses: Keras 3, which TensorFlow imports, imports
matplotlib.pyplot (an image gallery) and scikit-learn with SciPy (estimator wrappers) whenever
they are installed, as the test and demo extras install them: 2 of a command's 5 s of start-up on
a 2-core CPU. They look absent while TensorFlow imports, and are importable again right after.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import tempfile

SHOW = "ALBERT_SHOW_START_UP"


# Keras's optional imports (keras.src.visualization, keras.src.wrappers), each in a try block
# that takes an ImportError as "not installed".
UNUSED = ("matplotlib", "sklearn")


class QuietImport:
    """A meta-path finder that imports `name` (once) with `skip` looking absent and, when
    `capture`, file descriptor 2 captured: on success what it wrote is dropped, on failure it is
    written to stderr before the error propagates."""

    def __init__(self, name: str = "tensorflow", capture: bool = True, skip=UNUSED):
        self.name, self.capture, self.skip = name, capture, tuple(skip)

    def find_spec(self, name, path=None, target=None):
        if name != self.name:
            return None
        sys.meta_path.remove(self)  # once; and let the real finders find it
        spec = importlib.util.find_spec(name)
        if spec is None or spec.loader is None:
            return spec
        real = spec.loader.exec_module
        capture, skip = self.capture, self.skip

        def exec_module(module):
            # None in sys.modules makes `import x` raise ImportError; a module a user's own
            # code imported already stays.
            hidden = [n for n in skip if n not in sys.modules]
            sys.modules.update(dict.fromkeys(hidden, None))
            try:
                if capture:
                    captured(real, module)
                else:
                    real(module)
            finally:
                for n in hidden:
                    if sys.modules.get(n, False) is None:
                        del sys.modules[n]

        spec.loader.exec_module = exec_module
        return spec


def captured(run, module):
    """run(module) with file descriptor 2 in a temporary file, written out only if it fails."""
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as hidden:
        os.dup2(hidden.fileno(), 2)
        try:
            run(module)
        except BaseException:
            os.dup2(saved, 2)
            hidden.seek(0)
            os.write(2, hidden.read())
            raise
        finally:
            os.dup2(saved, 2)
            os.close(saved)


def quiet_start(verbose: bool, module: str = "tensorflow", skip=UNUSED) -> None:
    """TensorFlow's and transformers' start-up noise silenced, unless --verbose (`verbose`),
    ALBERT_SHOW_START_UP=1, or the user set TensorFlow's variable themselves; the modules in
    `skip` absent while it imports, in every case. `module`: the one whose import is handled
    (another stands in for TensorFlow in the tests)."""
    capture = False
    if verbose or os.environ.get("TF_CPP_MIN_LOG_LEVEL", "2") not in ("1", "2", "3"):
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "0")
    else:
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
        # "Token indices sequence length is longer than the specified maximum": windowing follows.
        os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
        capture = os.environ.get(SHOW, "") in ("", "0")
    if module not in sys.modules and not any(isinstance(f, QuietImport) and f.name == module
                                             for f in sys.meta_path):
        sys.meta_path.insert(0, QuietImport(module, capture, skip))


def quiet_argv(argv=None) -> list[str]:
    """A command's arguments (sys.argv[1:] by default) without --verbose, which every command
    takes, after quiet_start for it: what each main() does first."""
    argv = list(sys.argv[1:] if argv is None else argv)
    quiet_start("--verbose" in argv)
    return [a for a in argv if a != "--verbose"]
