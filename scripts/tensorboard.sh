#!/usr/bin/env bash
# TensorBoard for a log dir that is local, on FSx (/fsx/...), or in S3 (s3://bucket/prefix).
#   scripts/tensorboard.sh runs/pretraining/logs
#   scripts/tensorboard.sh /fsx/logs/albert 6006
#   scripts/tensorboard.sh s3://my-bucket/albert/logs    # mirrored locally every 60 s
# On a remote machine, tunnel the port from your laptop and open http://localhost:6006:
#   ssh -i key.pem -N -L 6006:localhost:6006 ubuntu@<instance-dns>
# A relative LOGDIR is the caller's: the script does not change directory.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
logdir=${1:?usage: scripts/tensorboard.sh LOGDIR [PORT]}
port=${2:-6006}
PY=$ROOT/.venv/bin/python
if [[ "$logdir" == s3://* ]]; then
    mirror=$(mktemp -d)
    echo "mirroring $logdir to $mirror every 60 s"
    "$PY" - "$logdir" "$mirror" <<'PY' &
import os, sys, time
import boto3
uri, dest = sys.argv[1], sys.argv[2]
bucket, _, prefix = uri[len("s3://"):].partition("/")
s3 = boto3.client("s3")
while True:
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
        for obj in page.get("Contents", []):
            path = os.path.join(dest, os.path.relpath(obj["Key"], prefix or "."))
            if not os.path.exists(path) or os.path.getsize(path) != obj["Size"]:
                os.makedirs(os.path.dirname(path), exist_ok=True)
                s3.download_file(bucket, obj["Key"], path)
    time.sleep(60)
PY
    trap 'kill $!' EXIT
    logdir=$mirror
elif [ ! -d "$logdir" ]; then
    echo "error: log dir $logdir does not exist (relative to $PWD)" >&2
    exit 2
fi
exec "$ROOT/.venv/bin/tensorboard" --logdir "$logdir" --port "$port" --bind_all
