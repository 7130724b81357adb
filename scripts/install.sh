#!/usr/bin/env bash
# Creates .venv (if missing) and installs prefrl into it, CPU torch first. Safe to re-run.
#
# PREFRL_INSTALL picks what goes in:
#   dev   (the default; scripts/test.sh, .ci/run): prefrl and the [dev] extra (pytest, ruff, mypy,
#         Ray, rl_zoo3, Playwright, ... : everything the tests and checks use)
#   train (scripts/train.sh): prefrl and its own dependencies only, what a training run needs
# The stamp file $venv/.prefrl-installed records which was installed ("dev" or "train"; an empty
# one, from before the split, was a dev install). A dev venv serves a training run as it is; a
# train venv is upgraded to dev when the tests need it; both reinstall when pyproject.toml changes.
# PREFRL_VENV puts the venv elsewhere (default: .venv in the repository), PYTHON picks the interpreter.
# Sourced by scripts/train.sh and scripts/test.sh (it puts the venv first on PATH), run by .ci/run.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="${PREFRL_VENV:-$root/.venv}"
py="${PYTHON:-python3}"
want="${PREFRL_INSTALL:-dev}"
case "$want" in
  dev | train) ;;
  *)
    echo "scripts/install.sh: PREFRL_INSTALL must be 'dev' or 'train', got '$want'" >&2
    exit 2
    ;;
esac
if [ ! -x "$venv/bin/python" ]; then
  "$py" -m venv "$venv"
fi
stamp="$venv/.prefrl-installed"
have=""
if [ -f "$stamp" ]; then
  have="$(head -n 1 "$stamp")"
  have="${have:-dev}" # an empty stamp: written by the installer before the split, always [dev]
fi
if [ "$have" = "dev" ]; then
  want="dev" # keep the test tools of a dev venv when pyproject.toml changes
fi
if [ -z "$have" ] || [ "$root/pyproject.toml" -nt "$stamp" ] || [ "$have" != "$want" ]; then
  "$venv/bin/python" -m pip install -q --upgrade pip
  # The CPU build first: with torch 2.13.0 in place, nothing pulls a CUDA build.
  "$venv/bin/python" -m pip install -q "torch==2.13.0"
  if [ "$want" = "dev" ]; then
    "$venv/bin/python" -m pip install -q -e "$root[dev]"
  else
    "$venv/bin/python" -m pip install -q -e "$root"
  fi
  echo "$want" >"$stamp"
fi
export PATH="$venv/bin:$PATH"
