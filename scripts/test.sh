#!/usr/bin/env bash
# Install the project with its test extras into .venv (if needed) and run every check:
# ruff, ruff format, mypy --strict, the Dockerfile linter and pytest. CI runs exactly this.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
    "$PY" -m venv .venv
fi
.venv/bin/python -m pip install --quiet --upgrade pip
.venv/bin/python -m pip install --quiet -e '.[test]'
export PATH="$PWD/.venv/bin:$PATH"
echo "== ruff check"; ruff check .
echo "== ruff format --check"; ruff format --check .
echo "== mypy --strict labeler"; mypy
if [ -f Dockerfile ]; then echo "== hadolint Dockerfile"; hadolint Dockerfile; fi
echo "== pytest"; python -m pytest "$@"
