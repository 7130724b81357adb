#!/usr/bin/env bash
# Installs what a training run needs (first run only: prefrl with CPU torch, not the test tools)
# and runs `prefrl train`. With no arguments: Pendulum-v1, SAC, oracle teacher, ending with a report.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PREFRL_INSTALL="${PREFRL_INSTALL:-train}" # a dev venv is used as it is
source "$root/scripts/install.sh"
cd "$root"
prefrl train "$@"
