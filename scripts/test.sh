#!/usr/bin/env bash
# Set up the environment (idempotent) and run the test suite: scripts/test.sh [--fast] [--plan] [pytest args]
#   (no option)  every test: what CI (.ci/run) runs
#   --fast       the unit tier only, -m "$UNIT_TIER": no test marked slow, horovod or e2e
#                (the markers are described in pyproject.toml); a -m of your own replaces it
#   --plan       print the commands it would run and exit, without setup
set -euo pipefail
cd "$(dirname "$0")/.."
UNIT_TIER="not slow and not horovod and not e2e"

tier=() plan=0 args=()
for arg in "$@"; do
    case "$arg" in
        --fast) tier=(-m "$UNIT_TIER") ;;
        --plan) plan=1 ;;
        *) args+=("$arg") ;;
    esac
done
# Two test processes (pytest-xdist), each taking whole groups (a file, or the files that share a
# trained model: tests/conftest.py), so shared fixtures (the quick demo, a trained model) are built
# once, longest group first (conftest's order, kept: --no-loadscope-reorder). Most of a test here
# is one core's work (tracing, compiling), so on a 2-core machine two at once take about two
# thirds of the time.
# ALBERT_TEST_WORKERS=N changes the count; 0 runs the tests in this process (`-n 0` does too).
workers=${ALBERT_TEST_WORKERS:-$([ "$(nproc)" -ge 2 ] && echo 2 || echo 0)}
pytest=(.venv/bin/python -m pytest ${tier[@]+"${tier[@]}"} -n "$workers" --dist loadgroup --no-loadscope-reorder
        ${args[@]+"${args[@]}"})

if [ "$plan" = 1 ]; then
    echo "would run: bash scripts/setup.sh"
    echo "would run: .venv/bin/ruff check ."
    echo "would run: $(printf '%q ' "${pytest[@]}" | sed 's/ $//')"
    exit 0
fi
bash scripts/setup.sh
echo "[test] ruff check"
.venv/bin/ruff check .
echo "[test] pytest${tier[*]:+ (unit tier: $UNIT_TIER)}"
exec "${pytest[@]}"
