#!/usr/bin/env bash
# Installs what is needed (first run only) and runs `prefrl train`.
# With no arguments: Pendulum-v1, SAC, oracle teacher, ending with a report.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$root/scripts/install.sh"
cd "$root"
prefrl train "$@"
