# SPDX-License-Identifier: Apache-2.0
# The Python package from the checkout (pyproject.toml, setup.py), built offline with Debian's
# tools: `python3 -m build --wheel --no-isolation` makes a wheel that installs into a clean venv
# (no system site-packages: the wheel needs nothing else) and routes there as the build tree's
# module and the chash CLI do; `pip install --no-build-isolation .` installs it into a venv.
# Both reuse the build tree's objects (CHASH_CMAKE_BUILD_DIR): seconds, not a new compile; a
# fresh build (what a user's `pip install .` does) is `make wheel`.
import json
import os
import re
import subprocess
import sys
import sysconfig
import zipfile

import pytest

from conftest import ROOT, build_dir, built

# The script each environment runs: where chash came from, and its answers.
PROBE = r"""
import json, sys
import chash
from chash.compat.uhashring import HashRing
keys = [f"user:{i}" for i in range(2000)]
r = chash.Router(["cache-1", "cache-2", "cache-3"], preset="ketama")
print(json.dumps({
    "file": chash.__file__,
    "version": chash.__version__,
    "presets": sorted(chash.presets()),
    "ketama": r.route_many(keys),
    "maglev": chash.Router({"a": 1, "b": 2, "c": 1}, algorithm="maglev").route_many(keys),
    "uhashring": [HashRing(["n1", "n2", "n3"]).get_node(k) for k in keys[:200]],
}))
"""


def run(argv, **kw):
    r = subprocess.run(argv, capture_output=True, text=True, timeout=600, **kw)
    assert r.returncode == 0, f"{argv}: exit {r.returncode}\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}"
    return r.stdout


def version():
    with open(os.path.join(ROOT, "CMakeLists.txt")) as f:
        return re.search(r"project\(chash VERSION ([0-9.]+)", f.read()).group(1)


def build_env(tmp):
    """Reuse the build tree's objects; keep setuptools' staging out of the checkout."""
    return dict(os.environ, CHASH_CMAKE_BUILD_DIR=build_dir(),
                CHASH_SETUP_BUILD_BASE=str(tmp / "setup"), PYTHONDONTWRITEBYTECODE="1",
                CMAKE_BUILD_PARALLEL_LEVEL="2", PIP_NO_INDEX="1",
                PIP_DISABLE_PIP_VERSION_CHECK="1")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    given = os.environ.get("CHASH_WHEEL")
    if given:
        return given
    tmp = tmp_path_factory.mktemp("wheel")
    run([sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(tmp / "dist"),
         ROOT], env=build_env(tmp), cwd=str(tmp))
    found = [f for f in os.listdir(tmp / "dist") if f.endswith(".whl")]
    assert len(found) == 1, found
    return str(tmp / "dist" / found[0])


@pytest.fixture(scope="module")
def reference():
    """The build tree's module (PYTHONPATH=build/python), and the CLI on the same keys."""
    out = json.loads(run([sys.executable, "-c", PROBE],
                         env=dict(os.environ, PYTHONPATH=os.path.join(build_dir(), "python"))))
    cli = built(os.environ.get("CHASH_CLI", os.path.join(build_dir(), "chash")), "chash")
    keys = "".join(f"user:{i}\n" for i in range(2000))
    out["cli_ketama"] = run([cli, "route", "--preset", "ketama", "--nodes",
                             "cache-1,cache-2,cache-3"], input=keys).split()
    return out


def test_wheel_contents(wheel):
    name = os.path.basename(wheel)
    tag = sysconfig.get_config_var("SOABI").split("-")[1]  # "311" of cpython-311-x86_64-...
    assert re.fullmatch(rf"chash-{re.escape(version())}-cp{tag}-cp{tag}-linux_\w+\.whl", name), name
    with zipfile.ZipFile(wheel) as z:
        files = set(z.namelist())
        meta = z.read(f"chash-{version()}.dist-info/METADATA").decode()
        wheel_meta = z.read(f"chash-{version()}.dist-info/WHEEL").decode()
    module = "chash/_chash" + sysconfig.get_config_var("EXT_SUFFIX")
    assert {"chash/__init__.py", "chash/__init__.pyi", "chash/py.typed",
            "chash/compat/__init__.py", "chash/compat/uhashring.py", module} <= files, files
    # Nothing but the package and its metadata (no tests, no build tree, no sources).
    assert all(f.startswith(("chash/", f"chash-{version()}.dist-info/")) for f in files), files
    assert f"Version: {version()}" in meta and "Name: chash" in meta
    assert "Root-Is-Purelib: false" in wheel_meta
    assert "Requires-Dist" not in meta  # so a venv without site-packages is enough


def test_wheel_imports_and_routes_in_a_clean_venv(wheel, reference, tmp_path):
    # No pip of its own (ensurepip costs seconds): Debian's pip installs into it (--python).
    venv = tmp_path / "venv"
    run([sys.executable, "-m", "venv", "--without-pip", str(venv)])
    py = str(venv / "bin" / "python")
    assert run([py, "-c", "import sys; print(sys.flags.no_site, sys.prefix != sys.base_prefix)"]
               ).split() == ["0", "True"]
    run([sys.executable, "-m", "pip", "--python", py, "install", "--no-index", "--no-deps", wheel],
        env=dict(os.environ, PIP_DISABLE_PIP_VERSION_CHECK="1"))
    assert run([py, "-c", "import importlib.util as u; print(u.find_spec('setuptools'))"]
               ).strip() == "None"  # clean: not even setuptools
    # Nothing from the checkout or the system is on its path: not the build tree, not Debian's.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    out = json.loads(run([py, "-c", PROBE], env=env, cwd=str(tmp_path)))
    assert out["file"].startswith(str(venv)), out["file"]
    assert out["version"] == version()
    for k in ("presets", "ketama", "maglev", "uhashring"):
        assert out[k] == reference[k], k
    assert out["ketama"] == reference["cli_ketama"]
    assert len(set(out["ketama"])) == 3


def test_pip_install_from_the_checkout(reference, tmp_path):
    """`pip install --no-build-isolation .` in a venv that sees Debian's setuptools and wheel
    (--system-site-packages: the build backend comes from Debian, nothing from PyPI)."""
    venv = tmp_path / "venv"
    run([sys.executable, "-m", "venv", "--system-site-packages", "--without-pip", str(venv)])
    py = str(venv / "bin" / "python")  # its `-m pip` is Debian's, installing into the venv
    run([py, "-m", "pip", "install", "--no-build-isolation", "--no-index", ROOT],
        env=build_env(tmp_path), cwd=str(tmp_path))
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    out = json.loads(run([py, "-c", PROBE], env=env, cwd=str(tmp_path)))
    assert out["file"].startswith(str(venv)), out["file"]
    assert out["version"] == version()
    assert out["ketama"] == reference["cli_ketama"]
    assert out["maglev"] == reference["maglev"]
    # The checkout is left as it was: setuptools staged under CHASH_SETUP_BUILD_BASE.
    assert not os.path.exists(os.path.join(ROOT, "python", "chash.egg-info"))


def test_a_tree_for_another_interpreter_is_refused(tmp_path):
    """setup.py says what is wrong instead of packing a module this interpreter cannot load."""
    fake = tmp_path / "tree"
    (fake / "python" / "chash").mkdir(parents=True)
    (fake / "CMakeCache.txt").write_text(f"CMAKE_HOME_DIRECTORY:INTERNAL={ROOT}\n"
                                         "CMAKE_GENERATOR:INTERNAL=Unix Makefiles\n"
                                         "CMAKE_PROJECT_NAME:STATIC=chash\n"
                                         "CMAKE_MAKE_PROGRAM:FILEPATH=make\n")
    (fake / "Makefile").write_text("chash_python:\n\t@true\n.PHONY: chash_python\n")
    (fake / "python" / "chash" / "_chash.cpython-00-x86_64-linux-gnu.so").write_text("")
    env = dict(build_env(tmp_path), CHASH_CMAKE_BUILD_DIR=str(fake))
    r = subprocess.run([sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir",
                        str(tmp_path / "dist"), ROOT], env=env, cwd=str(tmp_path),
                       capture_output=True, text=True, timeout=300)
    assert r.returncode != 0
    assert "was not built" in r.stdout + r.stderr and "Python3_EXECUTABLE" in r.stdout + r.stderr


def test_a_python_without_wheel_gets_a_hint(tmp_path):
    """A Python whose setuptools needs `wheel` for bdist_wheel and has none (pyenv, conda, a
    bare venv) gets told which package to install, not setuptools' "invalid command"."""
    try:
        import setuptools.command.bdist_wheel  # noqa: F401 (setuptools >= 70.1 has its own)
        pytest.skip("this setuptools builds wheels without the wheel package")
    except ImportError:
        pass
    shim = tmp_path / "shim" / "wheel"
    shim.mkdir(parents=True)
    (shim / "__init__.py").write_text("raise ImportError('no wheel here (test shim)')\n")
    env = dict(os.environ, PYTHONPATH=str(shim.parent))
    r = subprocess.run([sys.executable, os.path.join(ROOT, "setup.py"), "bdist_wheel"],
                       env=env, cwd=str(tmp_path), capture_output=True, text=True, timeout=120)
    assert r.returncode != 0
    assert "needs the Python package 'wheel'" in r.stderr, r.stderr
    assert "python3-wheel" in r.stderr and "pip install wheel" in r.stderr, r.stderr
    assert "invalid command" not in r.stdout + r.stderr
