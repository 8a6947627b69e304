#!/usr/bin/env bash
# Creates (or brings up to date) .venv-trainer/ at the repository root: python-trainer's stack (torch, transformers,
# peft, TRL, accelerate, datasets, tokenizers) pinned in python-trainer/requirements.txt. A local training target
# uses its python first when it exists (src/core/train/jobs/launchers/localPython.ts), the python-trainer tests and
# the learning benchmarks run with it. PYTHON picks the interpreter (default: Debian's /usr/bin/python3, which needs
# apt's python3-venv). Needs PyPI; about 2 minutes and 6 GB on a fresh machine (PyPI's torch is a CUDA build; it runs
# on the CPU too), a few seconds when up to date.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/venv.sh
venv=.venv-trainer
make_venv "$venv" python-trainer/requirements.txt
(cd / && "$OLDPWD/$venv/bin/python" -c 'import torch, transformers, peft, trl, accelerate, datasets, tokenizers, yaml, jsonschema, pytest; print("trainer venv ready: torch", torch.__version__, "transformers", transformers.__version__, "peft", peft.__version__, "trl", trl.__version__)')
