# Sourced by test.sh and example.sh: create .venv if needed and install the project with
# its test extras into it, then put it first on PATH. pip's chatter goes to a log that is
# shown only when the install fails.
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
    "$PY" -m venv .venv
fi
_pip_log=$(mktemp)
if ! { .venv/bin/python -m pip install --quiet --disable-pip-version-check --upgrade pip &&
       .venv/bin/python -m pip install --quiet --disable-pip-version-check -e '.[test]'; } \
       >"$_pip_log" 2>&1; then
    cat "$_pip_log" >&2
    echo "error: installing the project into .venv failed (pip output above)" >&2
    exit 1
fi
rm -f "$_pip_log"
export PATH="$PWD/.venv/bin:$PATH"
