#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Regenerates tests/compat/vectors/uhashring__*.tsv and uhashring-ketama__*.tsv with the real
# uhashring, Debian's python3-uhashring, run by Debian's /usr/bin/python3 (a pyenv python3 earlier
# in PATH would not see the package).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
if ! dpkg-query -W -f='${Status}' python3-uhashring 2>/dev/null | grep -q "install ok installed"; then
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-uhashring >/dev/null
fi
version=$(dpkg-query -W -f='${Version}' python3-uhashring)
pyver=$(/usr/bin/python3 -c 'import platform; print(platform.python_version())')
mkdir -p "$here/../vectors"
PEER="uhashring 2.1 (Debian python3-uhashring $version, /usr/bin/python3 $pyver)" \
  /usr/bin/python3 "$here/gen.py"
