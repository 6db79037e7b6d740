#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Regenerates tests/compat/vectors/node-hashring__*.tsv with the real npm package hashring
# (version pinned in package.json / package-lock.json, installed into ./node_modules).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
cd "$here"
if [ ! -f node_modules/hashring/package.json ] ||
   ! grep -q '"version": "3.2.0"' node_modules/hashring/package.json; then
  npm ci --no-audit --no-fund --silent
fi
mkdir -p ../vectors
PEER="hashring $(node -p 'require("hashring/package.json").version') (npm), node $(node --version)" \
  node gen.js
