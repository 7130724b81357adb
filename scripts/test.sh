#!/usr/bin/env bash
# Installs what is needed (prefrl and the [dev] test tools; a venv that scripts/train.sh made is
# upgraded) and runs the test suite, one pytest-xdist worker per core (each test runs its torch on one
# thread). Extra arguments go to pytest, e.g. `bash scripts/test.sh -m slow`; `-n 0` runs it in one process.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PREFRL_INSTALL=dev
source "$root/scripts/install.sh"
cd "$root"
python -m pytest -q -n auto --dist worksteal "$@"
