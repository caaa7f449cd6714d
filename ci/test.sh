#!/usr/bin/env bash
# The test command (README): install the pinned stack and iris with its test extra, then run pytest on
# every tier with pytest-xdist. Extra arguments go to pytest: ./ci/test.sh -m cpu_unit, ./ci/test.sh -x tests/ops.
#
# IRIS_SKIP_INSTALL=1 skips the install (GPU hosts whose Python already holds torch, triton and iris; 0 or unset
#   installs, anything else is refused):
#   IRIS_SKIP_INSTALL=1 ./ci/test.sh -m gpu
# PYTHON picks the interpreter (default python3).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
PYTHON="${PYTHON:-python3}"

SKIP="${IRIS_SKIP_INSTALL-0}"
if [[ "$SKIP" != 0 && "$SKIP" != 1 ]]; then
  echo "IRIS_SKIP_INSTALL='$SKIP'; expected 1 to skip the install, or 0 (the default)" >&2
  exit 2
fi
if [[ "$SKIP" != 1 ]]; then
  # torch is pinned exactly: an unpinned torch would pull a multi-GB CUDA build onto a CPU machine.
  # Nothing is downloaded when these are already installed, so this is quick on a second run.
  PIP_ROOT_USER_ACTION=ignore "$PYTHON" -m pip install -q "torch==2.13.0" "triton==3.6.0" -e ".[test]"
fi

exec "$PYTHON" -m pytest -n auto -q --durations=25 "$@"
