#!/usr/bin/env bash
# Install the project with its test extras into .venv (if needed) and run every check:
# ruff, ruff format, mypy --strict, the Dockerfile linter and pytest. CI runs exactly this.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/venv.sh
echo "== ruff check"; ruff check .
echo "== ruff format --check"; ruff format --check .
echo "== mypy --strict labeler"; mypy
echo "== hadolint Dockerfile"; hadolint Dockerfile
echo "== pytest"; python -m pytest "$@"
