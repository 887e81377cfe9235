#!/usr/bin/env bash
# Creates or updates the project's Python environment: a venv (default: the repository's .venv,
# VKD_VENV=DIR elsewhere) holding exactly python/requirements.lock. Idempotent: the lock file's
# SHA-256 is kept in the venv after a successful install, and an environment whose stamp matches
# is left as it is (no pip run). Uses the first python3 on PATH (3.10-3.14; the pinned torch
# wheels lie on the project's machines for 3.11).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="${VKD_VENV:-$root/.venv}"
lock="$root/python/requirements.lock"
stamp="$venv/.vkd-requirements.sha256"
want="$(sha256sum "$lock" | cut -d' ' -f1)"

if [ -x "$venv/bin/python" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$want" ]; then
  echo "install_deps: Python environment $venv up to date"
  exit 0
fi
if [ ! -x "$venv/bin/python" ]; then
  echo "install_deps: creating the Python environment $venv ($(python3 --version))"
  python3 -m venv "$venv"
fi
echo "install_deps: installing python/requirements.lock into $venv (torch alone is ~5 GB)"
# pip warns once per package about a configured local index folder that lacks it (some
# machines list such folders in pip.conf); those lines are dropped, every other one is shown.
log="$(mktemp)"
trap 'rm -f "$log"' EXIT
status=0
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check --require-virtualenv \
  -r "$lock" 2> "$log" || status=$?
grep -v "^WARNING: Location 'file://.*' is ignored: it is neither a file nor a directory.$" \
  "$log" >&2 || true
[ "$status" -eq 0 ] || { echo "install_deps: pip failed (exit $status)" >&2; exit "$status"; }
echo "$want" > "$stamp"
echo "install_deps: Python environment $venv ready"
