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
# PREFRL_EXTRAS=procgen also installs Procgen (the procgen/<game> ids, prefrl.envs.procgen) when it
#   is missing, into either kind: procgen2 and gym3 (with the old gym that procgen imports, and cffi)
#   WITHOUT their declared dependencies, which pin NumPy < 2 and imageio-ffmpeg < 0.4 (pip would
#   downgrade NumPy); Procgen runs under NumPy 2 all the same. Not a pyproject extra for that reason:
#   pip cannot skip an extra's dependencies.
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
extras="${PREFRL_EXTRAS:-}"
for extra in ${extras//,/ }; do
  if [ "$extra" != "procgen" ]; then
    echo "scripts/install.sh: PREFRL_EXTRAS may name 'procgen', got '$extra'" >&2
    exit 2
  fi
done
# Keep in step with prefrl.envs.procgen.PROCGEN_PACKAGES (a test compares them).
procgen_packages="procgen2==0.10.7 gym3==0.3.3 gym==0.26.2 cffi==1.17.1 pycparser==2.23"
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
if [[ ",${extras// /,}," == *,procgen,* ]] && ! "$venv/bin/python" -c "import procgen" 2>/dev/null; then
  # shellcheck disable=SC2086  # one word per package
  "$venv/bin/python" -m pip install -q --no-deps $procgen_packages
fi
export PATH="$venv/bin:$PATH"
