#!/usr/bin/env bash
# Container start. Nothing secret is baked into the image; instead:
# - SSH host keys are generated here;
# - on a multi-host SageMaker job the leader (first host) generates a key pair and publishes only
#   its public key on the job's FSx channel, which every host of the job mounts; the other hosts
#   authorise it, so mpirun on the leader can reach them. Keys die with the containers.
# "train" is what SageMaker runs: the training toolkit, which starts mpirun on the leader.
set -euo pipefail
ls /etc/ssh/ssh_host_*_key >/dev/null 2>&1 || ssh-keygen -A >/dev/null
mkdir -p /root/.ssh && chmod 700 /root/.ssh

config=/opt/ml/input/config/resourceconfig.json
shared=/opt/ml/input/data/fsx/.albert-ssh/${TRAINING_JOB_NAME:-local}
if [ -f "$config" ]; then
    read -r current leader count < <(python - "$config" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
print(c["current_host"], sorted(c["hosts"])[0], len(c["hosts"]))
PY
)
    if [ "$count" -gt 1 ]; then
        if [ "$current" = "$leader" ]; then
            [ -f /root/.ssh/id_ed25519 ] || ssh-keygen -q -t ed25519 -N "" -f /root/.ssh/id_ed25519
            mkdir -p "$shared"
            cp /root/.ssh/id_ed25519.pub "$shared/leader.pub.tmp"
            mv "$shared/leader.pub.tmp" "$shared/leader.pub"
        else
            for _ in $(seq 300); do [ -f "$shared/leader.pub" ] && break; sleep 1; done
            [ -f "$shared/leader.pub" ] || { echo "no leader key in $shared after 300s" >&2; exit 1; }
            cat "$shared/leader.pub" >> /root/.ssh/authorized_keys
            chmod 600 /root/.ssh/authorized_keys
        fi
    fi
fi
if [ "${1:-}" = "train" ]; then
    shift
    exec train "$@"
fi
exec "$@"
