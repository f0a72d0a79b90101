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
