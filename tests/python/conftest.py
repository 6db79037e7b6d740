# SPDX-License-Identifier: Apache-2.0
# ctest sets PYTHONPATH to build/python and CHASH_CLI to the chash binary; run by hand, the
# default build tree is used: PYTHONPATH=build/python python3 -m pytest -q tests/python
import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
if not any(os.path.isdir(os.path.join(p, "chash")) for p in sys.path if p):
    sys.path.insert(0, os.path.join(ROOT, "build", "python"))


@pytest.fixture(scope="session")
def cli():
    path = os.environ.get("CHASH_CLI", os.path.join(ROOT, "build", "chash"))
    if not os.access(path, os.X_OK):
        pytest.skip(f"no chash CLI at {path} (set CHASH_CLI)")
    return path


@pytest.fixture(scope="session")
def compat_dir():
    return os.path.join(ROOT, "tests", "compat")
