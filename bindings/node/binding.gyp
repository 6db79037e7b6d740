# SPDX-License-Identifier: Apache-2.0
# chash.node: the N-API addon (src/chash_node.cc) over libchash_c. Where chash is installed is a
# gyp variable, so a source tree or an install elsewhere builds the same way:
#   node-gyp rebuild --nodedir=/usr --chash_include_dir=... --chash_lib_dir=...
# (bindings/node/CMakeLists.txt passes the build tree's). --nodedir=/usr: the headers of the node
# on the machine (/usr/include/node), so node-gyp downloads nothing.
{
  "variables": {
    "chash_include_dir%": "/usr/local/include",
    "chash_lib_dir%": "/usr/local/lib",
  },
  "targets": [{
    "target_name": "chash",
    "sources": ["src/chash_node.cc"],
    "include_dirs": [
      "<!(node -p \"require('node-addon-api').include_dir\")",
      "<(chash_include_dir)",
      "../common",
    ],
    "defines": ["NAPI_VERSION=8", "NAPI_DISABLE_CPP_EXCEPTIONS"],
    "cflags_cc": ["-std=c++17", "-Wall", "-Wextra"],
    "libraries": ["-L<(chash_lib_dir)", "-lchash_c", "-Wl,-rpath,<(chash_lib_dir)"],
  }],
}
