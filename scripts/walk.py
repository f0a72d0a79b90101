"""How far a newcomer walks from a command to the first update: run `python -m albert.<tool>`
in this process, stop it at the first Trainer.train_step, and print

  files:          this checkout's albert files any of whose functions ran (a module's own
                  top-level code, run by its import, is not counted),
  run-time files: of those, the files whose functions were called from the command, not from
                  an import (a module's or a class's body),
  modules:        albert modules imported,
  frames:         albert frames on the stack at that call (the command's main() down to it).

    .venv/bin/python scripts/walk.py run_pretraining --model_size tiny ... (the tool's flags)

The checkout's own models/ is put first on the path, so a second checkout's walk is measured with
the same interpreter: `python /other/checkout/scripts/walk.py ...`.
"""
import os
import runpy
import sys
import threading

MODELS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "models")
PACKAGE = os.path.join(MODELS, "albert") + os.sep  # this checkout's, not transformers'


def _name(path: str) -> str:
    return path[len(PACKAGE):]


def _from_the_command(frame, tool: str) -> bool:
    """Whether `frame` was called from the command's body, not under an import."""
    while frame is not None:
        code = frame.f_code
        if code.co_name == "<module>" and code.co_filename == os.path.join(PACKAGE, f"{tool}.py"):
            return True
        if code.co_name == "<module>" or not code.co_flags & 2:  # a class body: no CO_NEWLOCALS
            return False
        frame = frame.f_back
    return False


def main(tool: str, argv: list[str]) -> None:
    ran, called = set(), set()

    def profile(frame, event, arg):
        if event != "call":
            return
        path = frame.f_code.co_filename
        if path.startswith(PACKAGE) and frame.f_code.co_name != "<module>":
            ran.add(_name(path))
            if _from_the_command(frame, tool):
                called.add(_name(path))
        if frame.f_code.co_name == "train_step" and path == os.path.join(PACKAGE, "train",
                                                                          "trainer.py"):
            stack = []
            while frame is not None:
                if frame.f_code.co_filename.startswith(PACKAGE):
                    stack.append(f"{_name(frame.f_code.co_filename)}:{frame.f_code.co_name}")
                frame = frame.f_back
            modules = [m for m in sys.modules if m == "albert" or m.startswith("albert.")]
            print(f"{tool}: files {len(ran)}, run-time files {len(called)}, "
                  f"modules {len(modules)}, frames {len(stack)}")
            print("frames: " + " <- ".join(stack))
            print("run-time files: " + " ".join(sorted(called)))
            sys.stdout.flush()
            os._exit(0)

    sys.path.insert(0, MODELS)
    sys.argv = [tool, *argv]
    sys.setprofile(profile)
    threading.setprofile(profile)
    runpy.run_module(f"albert.{tool}", run_name="__main__")
    print(f"{tool}: no update reached", file=sys.stderr)
    sys.exit(1)


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2:])
