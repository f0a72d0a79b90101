#!/usr/bin/env bash
# Fetch the Horovod 0.28.1 sdist and patch it so it compiles against TensorFlow >= 2.16.
# Usage: scripts/patch_horovod.sh DEST_DIR   (prints the patched source directory)
# Horovod's XLA op file (xla_mpi_ops.cc) uses XLA headers that TensorFlow no longer ships; we never
# run Horovod ops under XLA (the trainer allreduces outside the jit-compiled step), so dropping that
# one source file from the build loses nothing. Shared by scripts/setup.sh and docker/Dockerfile.
set -euo pipefail
HOROVOD_VERSION=${HOROVOD_VERSION:-0.28.1}
dest=${1:?usage: patch_horovod.sh DEST_DIR}
mkdir -p "$dest"
python -m pip download --quiet --no-deps --no-binary :all: --no-build-isolation \
    -d "$dest" "horovod==${HOROVOD_VERSION}" >&2
tar -xzf "$dest/horovod-${HOROVOD_VERSION}.tar.gz" -C "$dest"
src="$dest/horovod-${HOROVOD_VERSION}"
cmake_file="$src/horovod/tensorflow/CMakeLists.txt"
if grep -q 'xla_mpi_ops.cc' "$cmake_file"; then
    sed -i '/xla_mpi_ops\.cc/d' "$cmake_file"
    echo "patched: removed xla_mpi_ops.cc from $cmake_file" >&2
fi
echo "$src"
