#!/usr/bin/env bash
# Creates .venv (if missing) and installs prefrl into it, CPU torch first.
# Sourced by scripts/train.sh, scripts/test.sh and .ci/run; safe to re-run.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="${PREFRL_VENV:-$root/.venv}"
py="${PYTHON:-python3}"
if [ ! -x "$venv/bin/python" ]; then
  "$py" -m venv "$venv"
fi
stamp="$venv/.prefrl-installed"
if [ ! -f "$stamp" ] || [ "$root/pyproject.toml" -nt "$stamp" ]; then
  "$venv/bin/python" -m pip install -q --upgrade pip
  # The CPU build first: with torch 2.13.0 in place, nothing pulls a CUDA build.
  "$venv/bin/python" -m pip install -q "torch==2.13.0"
  "$venv/bin/python" -m pip install -q -e "$root[dev]"
  touch "$stamp"
fi
export PATH="$venv/bin:$PATH"
