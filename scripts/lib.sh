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
