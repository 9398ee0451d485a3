#!/usr/bin/env bash
# Installs the versus benchmark's peers, pinned (requirements.txt), into a
# virtual environment under the dependency cache that sees the project's
# torch environment (scripts/bootstrap.sh --with-python) through a .pth
# file: one torch for every system measured, installed once.
# Prints VERSUS_PYTHON=<interpreter> on its last line.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
top=$(cd "$here/../.." && pwd)
found=$("$top/scripts/bootstrap.sh" --with-python)
torch_python=$(sed -n 's/^RINGMEND_PYTHON=//p' <<<"$found" | tail -n 1)
[ -x "$torch_python" ] || { echo "versus/setup.sh: bootstrap.sh made no torch environment" >&2; exit 1; }
deps=${RINGMEND_DEPS:-${XDG_CACHE_HOME:-$HOME/.cache}/ringmend-deps}
# The environment's name changes with the pins, so a new pin is a new one.
env="$deps/versus-$(sha256sum "$here/requirements.txt" | cut -c1-12)"
stamp="$env/.installed"
if [ ! -f "$stamp" ]; then
  echo "versus/setup.sh: torchft, DLRover and matplotlib into $env" >&2
  rm -rf "$env"
  /usr/bin/python3 -m venv "$env"
  torch_site=$("$torch_python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  site=$("$env/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  echo "$torch_site" >"$site/ringmend-torch-environment.pth"
  "$env/bin/pip" install -q --disable-pip-version-check --no-deps -r "$here/requirements.txt"
  "$env/bin/python" -c 'import torch, torchft, dlrover, matplotlib' >&2
  touch "$stamp"
fi
echo "VERSUS_PYTHON=$env/bin/python"
