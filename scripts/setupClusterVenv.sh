#!/usr/bin/env bash
# Creates (or brings up to date) .venv-clusters/ at the repository root: the cluster tools whose own checks the
# SkyPilot and Kubernetes launchers' output must pass, pinned in test/clusters/requirements.txt (skypilot parses the
# launch command line and the task YAML as `sky launch` does; the kubernetes client's models are the API types the
# Job and Service manifests are checked against). test/unit/train/launchers/clusterTools.test.ts runs the checkers in
# test/clusters/ with its python. PYTHON picks the interpreter (default: Debian's /usr/bin/python3, which needs apt's
# python3-venv). Needs PyPI; about 35 s and 600 MB on a fresh machine, a second when up to date.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/venv.sh
venv=.venv-clusters
make_venv "$venv" test/clusters/requirements.txt
# SkyPilot writes ~/.sky when imported: a HOME of its own for the check.
home="$(mktemp -d)"
trap 'rm -rf "$home"' EXIT
(cd / && HOME="$home" "$OLDPWD/$venv/bin/python" -c 'import sky, kubernetes.client; print("cluster tools venv ready: skypilot", sky.__version__, "kubernetes", kubernetes.__version__)')
