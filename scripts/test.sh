#!/usr/bin/env bash
# Set up the environment (idempotent) and run the test suite: scripts/test.sh [pytest args]
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
echo "[test] ruff check"
.venv/bin/ruff check .
echo "[test] pytest"
exec .venv/bin/python -m pytest "$@"
