#!/usr/bin/env bash
# Creates (or brings up to date) .venv-agents/ at the repository root: the Python agent frameworks of the conformance
# matrix, pinned in test/conformance/python/requirements.txt, and the helper package python-agent/ installed the way
# a user installs it (pip install ./python-agent). test/conformance/python.test.ts and test/python/runPythonTests.mjs
# run their agents and tests with its python. PYTHON picks the interpreter (default: Debian's /usr/bin/python3, which
# needs apt's python3-venv). Needs PyPI; about 30 s and 210 MB on a fresh machine, a few seconds when up to date.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/venv.sh
venv=.venv-agents
make_venv "$venv" test/conformance/python/requirements.txt
# Always reinstalled: a change to python-agent/ reaches the venv with the next run of this script.
"$venv/bin/python" -m pip install --disable-pip-version-check --no-input -q --no-deps --force-reinstall ./python-agent
rm -rf python-agent/build python-agent/*.egg-info
# Imported from elsewhere than the repository, so the installed copy is what answers.
(cd / && "$OLDPWD/$venv/bin/python" -c 'import rollout_lab_agent, opentelemetry.sdk, opentelemetry.exporter.otlp.proto.http, langgraph, langchain_openai, openinference.instrumentation.langchain, agents, openinference.instrumentation.openai_agents, opentelemetry.instrumentation.openai_v2, pytest; print("python agents venv ready:", rollout_lab_agent.__file__)')
