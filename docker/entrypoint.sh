#!/usr/bin/env bash
# Container start. Nothing secret is baked into the image; instead:
# - SSH host keys are generated here;
# - on a multi-host SageMaker job the leader (first host) generates a key pair for this attempt
#   of the job, and each worker authorises its public key, so mpirun on the leader can reach
#   them. The public key travels through the job's FSx channel, which every host mounts, as an
#   answer to a request that carries a random nonce the worker drew at its own start:
#     worker: <shared>/requests/<host>  its nonce (rewritten until answered)
#     leader: <shared>/keys/<host>      "<that nonce> <leader public key>"
#   A managed-spot restart keeps the job name, so files of the previous attempt may still be
#   there when a worker starts, before the new leader. A key answered to an older nonce is not
#   this attempt's and is never accepted; the leader deletes the previous attempt's files before
#   answering, and a worker keeps only the current leader key in authorized_keys.
#   Whoever can write <shared> can answer with a key of their own, which the workers would
#   authorise for root: see the README for who must not have write access to that path.
# "train" is what SageMaker runs: the training toolkit, which starts mpirun on the leader.
# The ALBERT_* variables redirect paths and timings for tests (tests/test_cloud.py).
set -euo pipefail
ssh_dir=${ALBERT_SSH_DIR:-/root/.ssh}
host_key_dir=${ALBERT_SSH_HOST_KEY_DIR:-/etc/ssh}
config=${ALBERT_RESOURCE_CONFIG:-/opt/ml/input/config/resourceconfig.json}
shared=${ALBERT_SSH_SHARED:-/opt/ml/input/data/fsx/.albert-ssh/${TRAINING_JOB_NAME:-local}}
wait_s=${ALBERT_SSH_WAIT_S:-300}
poll_s=${ALBERT_SSH_POLL_S:-1}

if ! ls "$host_key_dir"/ssh_host_*_key >/dev/null 2>&1; then
    mkdir -p "$host_key_dir"
    for type in rsa ecdsa ed25519; do
        ssh-keygen -q -t "$type" -N "" -f "$host_key_dir/ssh_host_${type}_key"
    done
fi
mkdir -p "$ssh_dir" && chmod 700 "$ssh_dir"

nonce() { od -An -N16 -tx1 /dev/urandom | tr -d ' \n'; }

lead() {  # other hosts...
    local attempt pub host pending left deadline
    attempt=$(nonce)
    rm -f "$ssh_dir/id_ed25519" "$ssh_dir/id_ed25519.pub"
    ssh-keygen -q -t ed25519 -N "" -C "albert-leader-$attempt" -f "$ssh_dir/id_ed25519"
    pub=$(cat "$ssh_dir/id_ed25519.pub")
    mkdir -p "$shared/requests" "$shared/keys"
    chmod 700 "$shared"  # on shared storage, at least no other user of the hosts writes here
    # The previous attempt's requests and answers (and the single leader.pub of older images).
    rm -f "$shared/leader.pub" "$shared"/keys/* "$shared"/requests/*
    pending=("$@")
    deadline=$((SECONDS + wait_s))
    while [ "${#pending[@]}" -gt 0 ]; do
        left=()
        for host in "${pending[@]}"; do
            # Written after the clean-up above, so by a worker of this attempt.
            if [ -s "$shared/requests/$host" ]; then
                printf '%s %s\n' "$(cat "$shared/requests/$host")" "$pub" \
                    > "$shared/keys/$host.tmp"
                mv -f "$shared/keys/$host.tmp" "$shared/keys/$host"
            else
                left+=("$host")
            fi
        done
        pending=("${left[@]+"${left[@]}"}")
        [ "${#pending[@]}" -gt 0 ] || break
        if [ "$SECONDS" -ge "$deadline" ]; then
            echo "error: no key request from ${pending[*]} in $shared after ${wait_s}s" >&2
            exit 1
        fi
        sleep "$poll_s"
    done
}

follow() {  # this host, the leader
    local mine got key deadline request=$shared/requests/$1 answer=$shared/keys/$1
    mine=$(nonce)
    deadline=$((SECONDS + wait_s))
    while :; do
        if [ -f "$answer" ] && read -r got key < "$answer" && [ "$got" = "$mine" ]; then
            break
        fi
        # (Re)write the request: the leader's clean-up deletes one written before it started.
        if [ "$(cat "$request" 2>/dev/null)" != "$mine" ]; then
            mkdir -p "$shared/requests"
            printf '%s\n' "$mine" > "$request.$$" && mv -f "$request.$$" "$request" || true
        fi
        if [ "$SECONDS" -ge "$deadline" ]; then
            echo "error: no key from the leader ($2) for this attempt in $shared after" \
                 "${wait_s}s" >&2
            exit 1
        fi
        sleep "$poll_s"
    done
    touch "$ssh_dir/authorized_keys"
    { grep -v ' albert-leader-[0-9a-f]*$' "$ssh_dir/authorized_keys" || true; echo "$key"; } \
        > "$ssh_dir/authorized_keys.tmp"
    mv -f "$ssh_dir/authorized_keys.tmp" "$ssh_dir/authorized_keys"
    chmod 600 "$ssh_dir/authorized_keys"
}

if [ -f "$config" ]; then
    read -r current leader others < <(python3 - "$config" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
hosts = sorted(c["hosts"])
print(c["current_host"], hosts[0], " ".join(hosts[1:]))
PY
)
    if [ -n "$others" ]; then
        if [ "$current" = "$leader" ]; then
            # shellcheck disable=SC2086  # host names hold no spaces
            lead $others
        else
            follow "$current" "$leader"
        fi
    fi
fi
if [ "${1:-}" = "train" ]; then
    shift
    exec train "$@"
fi
exec "$@"
