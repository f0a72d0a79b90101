#!/usr/bin/env bash
# Create .venv at the repository root with everything this project needs, on a fresh machine.
# Idempotent: when nothing changed since the last successful run it finishes in seconds.
#   scripts/setup.sh            CPU build (GPU build when nvidia-smi and nvcc are present)
#   ALBERT_DEVICE=cpu|gpu scripts/setup.sh   force one
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
VENV="$ROOT/.venv"
PYTHON_BIN=${PYTHON:-python3.11}
HOROVOD_VERSION=0.28.1
log() { echo "[setup] $*"; }

if [ -z "${ALBERT_DEVICE:-}" ]; then
    if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1 && command -v nvcc >/dev/null 2>&1; then
        ALBERT_DEVICE=gpu
    else
        ALBERT_DEVICE=cpu
    fi
fi
log "target: $ALBERT_DEVICE"

# A stamp of every input that decides what gets installed: change one and setup re-runs the install.
stamp_inputs=$(cat pyproject.toml scripts/setup.sh scripts/patch_horovod.sh; echo "$ALBERT_DEVICE")
stamp=$(printf '%s' "$stamp_inputs" | sha256sum | cut -d' ' -f1)
stamp_file="$VENV/.albert-setup-stamp"

if [ -f "$stamp_file" ] && [ "$(cat "$stamp_file")" = "$stamp" ] \
   && "$VENV/bin/python" -c "import albert, tensorflow, horovod.tensorflow" >/dev/null 2>&1; then
    log "environment up to date ($VENV); nothing to do"
    exit 0
fi

if ! command -v "$PYTHON_BIN" >/dev/null 2>&1; then
    if command -v python3 >/dev/null 2>&1 && python3 -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))'; then
        PYTHON_BIN=python3
    else
        echo "[setup] error: Python 3.11 is required (set PYTHON=/path/to/python3.11)" >&2
        exit 1
    fi
fi

# Debian packages the Horovod build needs; installed only when missing.
missing=()
command -v cmake >/dev/null 2>&1 || missing+=(cmake)
command -v g++ >/dev/null 2>&1 || missing+=(g++)
command -v make >/dev/null 2>&1 || missing+=(make)
if [ ${#missing[@]} -gt 0 ]; then
    log "installing Debian packages: ${missing[*]}"
    SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}"
fi

if [ ! -x "$VENV/bin/python" ]; then
    log "creating virtual environment $VENV with $PYTHON_BIN"
    "$PYTHON_BIN" -m venv "$VENV"
fi
PY="$VENV/bin/python"
PIP=("$PY" -m pip --disable-pip-version-check)

log "upgrading pip/setuptools/wheel"
"${PIP[@]}" install --quiet --upgrade "pip>=24" "setuptools>=68" wheel

extras="$ALBERT_DEVICE,test,profile,demo"
log "installing albert (editable) with pinned dependencies [$extras]"
"${PIP[@]}" install --quiet -e ".[$extras]"

if "$PY" -c "import horovod.tensorflow" >/dev/null 2>&1 \
   && [ "$("$PY" -c 'import horovod; print(horovod.__version__)')" = "$HOROVOD_VERSION" ]; then
    log "horovod $HOROVOD_VERSION already built"
else
    log "building horovod $HOROVOD_VERSION from source (patched for TF 2.21; a few minutes)"
    "${PIP[@]}" install --quiet cloudpickle psutil pyyaml packaging cffi
    build_dir=$(mktemp -d)
    src=$(PATH="$VENV/bin:$PATH" bash scripts/patch_horovod.sh "$build_dir")
    export HOROVOD_WITH_TENSORFLOW=1 HOROVOD_WITH_GLOO=1 HOROVOD_WITHOUT_MPI=1
    export HOROVOD_WITHOUT_PYTORCH=1 HOROVOD_WITHOUT_MXNET=1
    if [ "$ALBERT_DEVICE" = gpu ]; then
        export HOROVOD_GPU_OPERATIONS=NCCL
        # Without a system NCCL (libnccl-dev), use the one tensorflow[and-cuda] installed.
        if [ ! -f /usr/include/nccl.h ] && [ -z "${HOROVOD_NCCL_HOME:-}" ]; then
            nccl=$("$PY" -c 'import nvidia.nccl, os; print(os.path.dirname(nvidia.nccl.__file__))' 2>/dev/null || true)
            if [ -n "$nccl" ] && [ -f "$nccl/include/nccl.h" ]; then
                [ -e "$nccl/lib/libnccl.so" ] || ln -s libnccl.so.2 "$nccl/lib/libnccl.so"
                export HOROVOD_NCCL_HOME="$nccl" HOROVOD_NCCL_LINK=SHARED
                log "using NCCL from $nccl"
            else
                echo "[setup] error: NCCL headers not found; install libnccl-dev or set HOROVOD_NCCL_HOME" >&2
                exit 1
            fi
        fi
    fi
    MAKEFLAGS="-j$(nproc)" "${PIP[@]}" install --no-build-isolation --no-cache-dir "$src" \
        > "$build_dir/build.log" 2>&1 || { tail -50 "$build_dir/build.log" >&2; echo "[setup] error: horovod build failed, full log: $build_dir/build.log" >&2; exit 1; }
    rm -rf "$build_dir"
fi

log "checking imports"
"$PY" - <<'PYCHECK'
import horovod
import horovod.tensorflow as hvd
import tensorflow as tf
import torch
import transformers

import albert
print(f"[setup] tensorflow {tf.__version__}, keras {tf.keras.__version__ if hasattr(tf.keras, '__version__') else ''}, "
      f"horovod {horovod.__version__}, transformers {transformers.__version__}, torch {torch.__version__}")
PYCHECK
echo "$stamp" > "$stamp_file"
log "done: activate with 'source .venv/bin/activate'"
