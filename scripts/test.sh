#!/usr/bin/env bash
# Installs what is needed (first run only) and runs the test suite.
# Extra arguments go to pytest, e.g. `bash scripts/test.sh -m slow`.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$root/scripts/install.sh"
cd "$root"
python -m pytest -q "$@"
