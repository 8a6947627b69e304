# Sourced by the setup*Venv.sh scripts: make_venv DIR REQUIREMENTS creates (or brings up to date) a venv at DIR with the
# pinned REQUIREMENTS; a venv whose requirements file has not changed since its last install is left as it is. PYTHON
# picks the interpreter (default: Debian's /usr/bin/python3, which needs apt's python3-venv).
make_venv() {
  local venv="$1" requirements="$2"
  local python="${PYTHON:-$( [ -x /usr/bin/python3 ] && echo /usr/bin/python3 || echo python3 )}"
  if [ ! -x "$venv/bin/python" ]; then
    "$python" -m venv "$venv" || { echo "could not create $venv with $python: on Debian, apt-get install python3-venv (or set PYTHON to another python3)" >&2; return 1; }
  fi
  local stamp="$venv/.requirements.sha256" want
  want="$(sha256sum "$requirements" | cut -d' ' -f1)"
  if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
    "$venv/bin/python" -m pip install --disable-pip-version-check --no-input -q -r "$requirements"
    echo "$want" >"$stamp"
  fi
}
