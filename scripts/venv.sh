# Sourced by test.sh and example.sh: create .venv if needed and install the project with
# its test extras into it, then put it first on PATH.
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
    "$PY" -m venv .venv
fi
.venv/bin/python -m pip install --quiet --disable-pip-version-check --upgrade pip
.venv/bin/python -m pip install --quiet --disable-pip-version-check -e '.[test]'
export PATH="$PWD/.venv/bin:$PATH"
