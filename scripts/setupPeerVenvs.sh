#!/usr/bin/env bash
# Creates (or brings up to date) the venvs of the peers the lab is checked and measured against, each pinned in
# test/peers/: .venv-phoenix/ (Arize Phoenix) and .venv-mlflow/ (MLflow's tracking server), which
# test/e2e/peerExport.test.ts starts to receive `traces export --otlp`, and the otlp.ingest.phoenix bench. They are two
# venvs because Phoenix and MLflow pin conflicting graphql-core versions. With arguments, only the venvs named:
#   scripts/setupPeerVenvs.sh phoenix mlflow agentlightning
# agentlightning (.venv-agentlightning/, for the gateway.call.peer bench only) needs Python >= 3.12: PYTHON if set, else
# the first python3.12/3.13 on PATH or under ~/.pyenv. Needs PyPI; about a minute each on a fresh machine, a second
# when up to date.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/venv.sh

python312() {
  local p
  for p in "${PYTHON:-}" python3.13 python3.12 "$HOME"/.pyenv/versions/3.1[2-9]*/bin/python3; do
    [ -n "$p" ] && command -v "$p" >/dev/null 2>&1 || continue
    if "$p" -c 'import sys; sys.exit(sys.version_info < (3, 12))' 2>/dev/null; then command -v "$p"; return 0; fi
  done
  return 1
}

peers=("$@")
[ ${#peers[@]} -gt 0 ] || peers=(phoenix mlflow)
for peer in "${peers[@]}"; do
  case "$peer" in
    phoenix)
      make_venv .venv-phoenix test/peers/phoenix-requirements.txt
      echo "phoenix venv ready: $(.venv-phoenix/bin/python -c 'from importlib.metadata import version; print(version("arize-phoenix"))')"
      ;;
    mlflow)
      make_venv .venv-mlflow test/peers/mlflow-requirements.txt
      echo "mlflow venv ready: $(.venv-mlflow/bin/python -c 'from importlib.metadata import version; print(version("mlflow"))')"
      ;;
    agentlightning)
      py="$(python312)" || { echo "agentlightning needs Python >= 3.12 and none was found (PYTHON, python3.12, python3.13, ~/.pyenv/versions/3.12+); install one or set PYTHON" >&2; exit 1; }
      PYTHON="$py" make_venv .venv-agentlightning test/peers/agentlightning-requirements.txt
      echo "agentlightning venv ready: $(.venv-agentlightning/bin/python -c 'from importlib.metadata import version; print(version("agentlightning"))') on $("$py" --version)"
      ;;
    *) echo "unknown peer \"$peer\": give phoenix, mlflow or agentlightning" >&2; exit 2 ;;
  esac
done
