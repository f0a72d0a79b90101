# Helpers the shipped pretraining scripts share; sourced, not run.

# A path as the caller meant it: relative paths are the caller's directory's.
abspath() { case $1 in /*) printf '%s\n' "$1" ;; *) printf '%s/%s\n' "$PWD" "$1" ;; esac; }

# Shell-quoted as Python's shlex.quote does: bare where safe, else in single quotes.
quote() {
    local out=() a q="'\"'\"'"
    for a in "$@"; do
        if [[ $a =~ ^[A-Za-z0-9_@%+=:,./-]+$ ]]; then out+=("$a"); else out+=("'${a//\'/$q}'"); fi
    done
    echo "${out[*]}"
}

# horovodrun checks its build by importing horovod.tensorflow in subprocesses, each of which
# prints TensorFlow's start-up INFO lines, so they read as one set per rank (issue 34 item 12).
# Level 1 drops INFO only: warnings and errors still show. A caller's own setting wins.
export TF_CPP_MIN_LOG_LEVEL=${TF_CPP_MIN_LOG_LEVEL:-1}

# The exit status of a run that SIGTERM stopped with its progress in a checkpoint, which the same
# command resumes (albert.tasks.runner.INTERRUPTED): what a shell reports for a process SIGTERM
# killed, so nothing downstream takes the run for a finished one.
INTERRUPTED=143

# Runs a trainer ("$@") and returns its exit status. SIGTERM or SIGINT sent to this script (a
# container's or a job's stop reaches the script, not what it started) is passed on to the
# trainer as SIGTERM, which saves and stops. horovodrun exits 1 whatever its ranks did, naming the
# first failed rank's status last ("Exit code: 143", a rank killed by SIGTERM included): that, or
# a stop this script passed on, is returned as INTERRUPTED.
run_trainer() {
    local dir child tee_pid status=0 passed=0
    dir=$(mktemp -d)
    mkfifo "$dir/stderr"
    # The trainer's stderr is copied to read horovodrun's last lines; the copy ignores the stop
    # signals, so it outlives the trainer's last words.
    (trap '' TERM INT; exec tee "$dir/log" < "$dir/stderr" >&2) &
    tee_pid=$!
    "$@" 2> "$dir/stderr" &
    child=$!
    trap 'passed=1; kill -TERM "$child" 2>/dev/null || true' TERM INT
    # A trapped signal ends `wait` early (status > 128) with the trainer still running: wait on.
    while :; do
        wait "$child" || true
        kill -0 "$child" 2>/dev/null || break
    done
    wait "$child" || status=$?  # the trainer's own status, which bash keeps
    trap - TERM INT
    for _ in $(seq 50); do kill -0 "$tee_pid" 2>/dev/null || break; sleep 0.1; done
    if [ "$status" -ne 0 ] && { [ "$passed" = 1 ] ||
            grep -q "^Exit code: $INTERRUPTED\$" "$dir/log"; }; then
        status=$INTERRUPTED
    fi
    rm -rf "$dir"
    return "$status"
}

# The one line a script says of an interrupted run: "$1" its name, "$2" the checkpoint directory,
# "$3" what is resumed.
say_interrupted() {
    echo "$1 interrupted (exit status $INTERRUPTED): the checkpoint in $(quote "$2") holds" \
        "$3's progress; run this script again, with the same settings, to resume" >&2
}
