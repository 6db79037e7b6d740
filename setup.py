# SPDX-License-Identifier: Apache-2.0
"""Builds the Python package chash with CMake (pyproject.toml; docs/PACKAGING.md).

setuptools packs the pure-Python part (python/chash/); the extension module chash._chash is
compiled by CMake exactly as the C++ build does (python/CMakeLists.txt, target chash_python: the
module linked to a static libchash), so there is one description of how it is built.

Environment:
  CHASH_CMAKE_BUILD_DIR  an existing CMake tree of this checkout to build the module in (its
                         objects are reused: `make test` packs the wheel from the build tree in
                         seconds). Default: a Release tree of its own under the build base,
                         configured with the library and the module only, kept between runs.
  CHASH_CMAKE_ARGS       more arguments for that tree's configure step (shell words).
  CHASH_SETUP_BUILD_BASE where setuptools stages its files (default: build-python/ in the
                         checkout; the CMake tree `build/` keeps its name).
  CMAKE_BUILD_PARALLEL_LEVEL  compile jobs (default: setuptools' --parallel, else every CPU).
"""
import os
import re
import shlex
import shutil
import subprocess
import sys
import sysconfig

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = os.path.dirname(os.path.abspath(__file__))
TARGET = "chash_python"  # python/CMakeLists.txt


def project_version():
    """The version in CMakeLists.txt's project(), the one place it is written."""
    with open(os.path.join(ROOT, "CMakeLists.txt"), encoding="utf-8") as f:
        m = re.search(r"project\(\s*chash\s+VERSION\s+([0-9][0-9.]*)", f.read())
    if not m:
        raise RuntimeError("CMakeLists.txt: no `project(chash VERSION x.y.z)` found")
    return m.group(1)


def cmake_home(build_dir):
    """The source directory a configured CMake tree belongs to, or None if not configured."""
    cache = os.path.join(build_dir, "CMakeCache.txt")
    if not os.path.isfile(cache):
        return None
    with open(cache, encoding="utf-8", errors="replace") as f:
        for line in f:
            if line.startswith("CMAKE_HOME_DIRECTORY:"):
                return line.split("=", 1)[1].strip()
    return None


def require_bdist_wheel():
    """`pip install .` and `python -m build` run `setup.py bdist_wheel`, a command the `wheel`
    package brings to setuptools before 70.1. A Python without it (pyenv, conda, python.org, a
    venv without system site-packages, with --no-build-isolation) otherwise stops at setuptools'
    bare "invalid command 'bdist_wheel'"."""
    if "bdist_wheel" not in sys.argv[1:]:
        return
    for module in ("setuptools.command.bdist_wheel", "wheel.bdist_wheel"):
        try:
            __import__(module)
            return
        except ImportError:
            pass
    sys.exit(
        f"setup.py: building the chash wheel needs the Python package 'wheel', which this "
        f"Python ({sys.executable}, {sys.version.split()[0]}) does not have.\n"
        f"  Debian's python3: apt-get install python3-wheel, and make the venv with "
        f"/usr/bin/python3 -m venv --system-site-packages venv\n"
        f"  another Python (pyenv, conda, python.org): {sys.executable} -m pip install wheel "
        f"(in the venv you install into), or drop --no-build-isolation so pip fetches it\n"
        f"  docs/PYTHON.md, \"Which Python\"")


require_bdist_wheel()


class CMakeBuild(build_ext):
    """build_ext that runs `cmake --build <tree> --target chash_python` and copies the module."""

    def build_extension(self, ext):
        cmake = shutil.which("cmake")
        if cmake is None:
            raise RuntimeError("cmake not found: apt-get install cmake (scripts/bootstrap.sh)")
        given = os.environ.get("CHASH_CMAKE_BUILD_DIR")
        tree = os.path.abspath(given) if given else os.path.join(os.path.abspath(self.build_temp),
                                                                 "cmake")
        home = cmake_home(tree)
        if home is not None and os.path.realpath(home) != os.path.realpath(ROOT):
            raise RuntimeError(f"{tree} is a CMake tree of {home}, not of {ROOT}")
        if home is None:
            self.configure(cmake, tree)
        jobs = []
        if "CMAKE_BUILD_PARALLEL_LEVEL" not in os.environ:
            jobs = ["-j", str(self.parallel or os.cpu_count() or 1)]
        self.spawn([cmake, "--build", tree, "--target", TARGET] + jobs)

        # The module's file name carries the interpreter's ABI tag; a tree configured for
        # another interpreter made a module this one cannot load.
        suffix = sysconfig.get_config_var("EXT_SUFFIX")
        built = os.path.join(tree, "python", "chash", "_chash" + suffix)
        if not os.path.isfile(built):
            found = sorted(f for f in os.listdir(os.path.join(tree, "python", "chash"))
                           if f.startswith("_chash."))
            raise RuntimeError(
                f"{built} was not built (the tree has {found or 'no module'}): its "
                f"Python3_EXECUTABLE is not {sys.executable}; reconfigure it with "
                f"-DPython3_EXECUTABLE={sys.executable} or unset CHASH_CMAKE_BUILD_DIR")
        dest = self.get_ext_fullpath(ext.name)
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        shutil.copyfile(built, dest)

    def configure(self, cmake, tree):
        # The library and the module only: no CLI, proxy, tests, benchmarks or install rules.
        args = [
            cmake, "-S", ROOT, "-B", tree,
            "-DCMAKE_BUILD_TYPE=Release",
            f"-DPython3_EXECUTABLE={sys.executable}",
            "-DCHASH_PYTHON=ON",
            "-DCHASH_BUILD_SHARED=OFF",
            "-DCHASH_BUILD_TESTS=OFF",
            "-DCHASH_BUILD_BENCH=OFF",
            "-DCHASH_BUILD_EXAMPLES=OFF",
            "-DCHASH_BUILD_TOOLS=OFF",
            "-DCHASH_BUILD_PROXY=OFF",
            "-DCHASH_BUILD_BINDINGS=OFF",
            "-DCHASH_INSTALL=OFF",
        ] + shlex.split(os.environ.get("CHASH_CMAKE_ARGS", ""))
        self.spawn(args)


build_base = os.environ.get("CHASH_SETUP_BUILD_BASE", os.path.join(ROOT, "build-python"))
os.makedirs(build_base, exist_ok=True)

# The package layout lives here rather than in pyproject.toml's [tool.setuptools], which Debian
# 12's setuptools 66 still calls beta (and warns about on every build).
setup(
    version=project_version(),
    package_dir={"": "python"},
    packages=["chash", "chash.compat"],
    package_data={"chash": ["py.typed", "*.pyi"]},
    ext_modules=[Extension("chash._chash", sources=[])],
    cmdclass={"build_ext": CMakeBuild},
    # Keeps setuptools out of the CMake tree build/ and its egg-info out of python/.
    options={"build": {"build_base": build_base}, "egg_info": {"egg_base": build_base}},
    zip_safe=False,
)
