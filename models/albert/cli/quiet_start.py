"""What a command prints before its own first line. TensorFlow writes C++ start-up lines to the
process's stderr (file descriptor 2) while it imports, before any log level applies ("All log
messages before absl::InitializeLog()...", "oneDNN custom operations are on..."): noise for this
toolkit's users. So a command (albert.cli.flags.run_main) takes two plain steps once its flags
are parsed (--help and a bad flag never wait for TensorFlow):

- start_environment(args.verbose): the variables set that TensorFlow reads when it starts (its
  log level, transformers' verbosity, the CPU allocator);
- import_tensorflow(args.verbose): TensorFlow imported once, with file descriptor 2 captured.

What the capture hides can still be seen:

- an import that fails prints what it wrote (the real start-up error: a CUDA library that will
  not load, a missing symbol) before its Python error; an import that kills the process (an
  abort, a segfault) prints it too, from the process that holds the capture (capture_fd2);
- ALBERT_SHOW_START_UP=1 captures nothing: every line as TensorFlow writes it;
- --verbose, which every command's parser takes (albert.cli.flags.Parser), captures nothing
  either, and turns TensorFlow's own logging up too (TF_CPP_MIN_LOG_LEVEL=0).
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys

SHOW = "ALBERT_SHOW_START_UP"


def start_environment(verbose: bool) -> None:
    """The variables TensorFlow and transformers read when they start, each only where the user
    set nothing: their start-up noise down unless `verbose` (or the user chose TensorFlow's log
    level below 1), and TensorFlow's BFC allocator on the CPU."""
    if verbose or os.environ.get("TF_CPP_MIN_LOG_LEVEL", "2") not in ("1", "2", "3"):
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "0")
    else:
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
        # "Token indices sequence length is longer than the specified maximum": windowing follows.
        os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    # TensorFlow's default CPU allocator hands large buffers back to the system, so every step
    # faults them in again: on a 2-core AMD EPYC the demo's pretraining spent a quarter of its CPU
    # time in the kernel (16.5M page faults in 500 updates). The BFC allocator keeps and reuses
    # them: 1.5x the updates per second, the same losses to the digit. Read once, when TensorFlow
    # makes its first tensor; a value the user set wins.
    os.environ.setdefault("TF_CPU_ALLOCATOR_USE_BFC", "true")


def captures(verbose: bool) -> bool:
    """Whether TensorFlow's start-up lines are captured: not with --verbose, ALBERT_SHOW_START_UP
    set (to anything but 0), or TensorFlow's own log level at 0 (the user wants its lines)."""
    return (not verbose and os.environ.get(SHOW, "") in ("", "0")
            and os.environ.get("TF_CPP_MIN_LOG_LEVEL", "2") in ("1", "2", "3"))


def import_tensorflow(verbose: bool, module: str = "tensorflow"):
    """`module` (TensorFlow; a stand-in in the tests) imported, with file descriptor 2 captured
    unless captures(verbose) says no; the module. Imported already: nothing is captured."""
    if module in sys.modules or not captures(verbose):
        return __import__(module)
    with capture_fd2():
        return __import__(module)


@contextlib.contextmanager
def capture_fd2():
    """File descriptor 2 goes into a pipe for the block. A forked keeper process reads the pipe
    and, when it closes, writes what it read to the real stderr unless this process marked the
    block a success: so a failure shows what was written, and a crash that kills this process
    (an abort inside a C++ library, no Python left to print anything) too, as the keeper still
    holds the lines when the pipe closes with the process."""
    done = os.urandom(16).hex().encode()  # the success mark: no library writes it by chance
    sys.stderr.flush()
    read, write = os.pipe()
    keeper = os.fork()
    if keeper == 0:  # pragma: no cover - the keeper, which exits here (covered by the tests)
        _keep(read, write, done)
    os.close(read)
    saved = os.dup(2)
    os.dup2(write, 2)
    succeeded = False
    try:
        yield
        succeeded = True
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)
        if succeeded:
            os.write(write, done)
        os.close(write)
        # Before the caller goes on: a failure's lines come before its Python error.
        os.waitpid(keeper, 0)


def _keep(read: int, write: int, done: bytes) -> None:
    """The keeper's whole life: the pipe read to its end, written to stderr unless it ends with
    the success mark. Interrupts go to the command, which closes the pipe as it unwinds."""
    try:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        os.close(write)
        chunks = []
        while chunk := os.read(read, 65536):
            chunks.append(chunk)
        text = b"".join(chunks)
        if not text.endswith(done):
            while text:
                text = text[os.write(2, text):]
    finally:
        os._exit(0)
