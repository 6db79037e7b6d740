# SPDX-License-Identifier: Apache-2.0
# What ships beside the programs and libchash (docs/PACKAGING.md), and the Debian package.
#
# Installed with the programs (component chash_programs, so `make install` has them too):
#   share/man/man1/chash.1.gz, share/man/man8/chash-proxy.8.gz   from --help (dist/man/)
#   share/bash-completion/completions/chash, chash-proxy          (dist/bash-completion/)
#   share/chash/grafana/chash-proxy.json                          (dist/grafana/)
# In the .deb only (component chash_deb): share/doc/chash/{copyright,changelog.Debian.gz} and
# the guides (README.md, docs/*.md).
#
# The .deb is CPack's DEB generator over these install rules: the files are the ones
# `cmake --install` puts down, under the prefix /usr, from whatever tree CPack is run in (the
# unit and the config find their paths at install time: cmake/install_service.cmake). CPack
# rather than debhelper because the install rules already say what goes where and a built tree
# is packaged as it is, in seconds (`make test` packs the test tree), where dh would configure,
# build and test a tree of its own; dpkg-shlibdeps still writes Depends.
#   make package                          the Release tree build-deb/ -> build-deb/chash_*.deb
#   cpack --config <tree>/CPackConfig.cmake -B <dir>       any configured and built tree

# ---- man pages, bash completion, the dashboard ---------------------------------------------

option(CHASH_MAN "Generate the man pages chash(1) and chash-proxy(8) with help2man" ON)
if(CHASH_MAN AND TARGET chash-cli AND TARGET chash-proxy AND NOT CHASH_SANITIZE)
  find_program(CHASH_HELP2MAN help2man)
  if(NOT DEFINED Python3_EXECUTABLE AND EXISTS /usr/bin/python3)
    set(Python3_EXECUTABLE /usr/bin/python3)
  endif()
  find_package(Python3 COMPONENTS Interpreter)
  if(CHASH_HELP2MAN AND Python3_Interpreter_FOUND)
    set(CHASH_MAN_DIR ${PROJECT_BINARY_DIR}/man)
    file(GLOB CHASH_MAN_SOURCES CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/dist/man/*)
    add_custom_command(
        OUTPUT ${CHASH_MAN_DIR}/chash.1.gz ${CHASH_MAN_DIR}/chash-proxy.8.gz
        COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/dist/man/make_man.py
                --chash $<TARGET_FILE:chash-cli> --proxy $<TARGET_FILE:chash-proxy>
                --out ${CHASH_MAN_DIR}
        DEPENDS chash-cli chash-proxy ${CHASH_MAN_SOURCES}
        COMMENT "Man pages chash(1), chash-proxy(8) (help2man)" VERBATIM)
    add_custom_target(chash_man ALL
        DEPENDS ${CHASH_MAN_DIR}/chash.1.gz ${CHASH_MAN_DIR}/chash-proxy.8.gz)
    # OPTIONAL: a tree whose `all` was not built installs without them (the .deb test checks
    # that the package has them).
    install(FILES ${CHASH_MAN_DIR}/chash.1.gz DESTINATION ${CMAKE_INSTALL_MANDIR}/man1
            COMPONENT chash_programs OPTIONAL)
    install(FILES ${CHASH_MAN_DIR}/chash-proxy.8.gz DESTINATION ${CMAKE_INSTALL_MANDIR}/man8
            COMPONENT chash_programs OPTIONAL)
  else()
    message(STATUS "chash: help2man or python3 not found, no man pages (scripts/bootstrap.sh)")
  endif()
endif()

# bash-completion looks in share/bash-completion/completions under every XDG data dir, so the
# files work from /usr/local too.
set(CHASH_COMPLETIONS_DIR ${CMAKE_INSTALL_DATADIR}/bash-completion/completions)
if(TARGET chash-cli)
  install(FILES dist/bash-completion/chash DESTINATION ${CHASH_COMPLETIONS_DIR}
          COMPONENT chash_programs)
endif()
if(TARGET chash-proxy)
  install(FILES dist/bash-completion/chash-proxy DESTINATION ${CHASH_COMPLETIONS_DIR}
          COMPONENT chash_programs)
  install(FILES dist/grafana/chash-proxy.json DESTINATION ${CMAKE_INSTALL_DATADIR}/chash/grafana
          COMPONENT chash_programs)
endif()

# ---- the Debian package ----------------------------------------------------------------------

# dist/debian/changelog is where the package's version is written: its first entry's upstream
# part must be this project's version (tests/dist/test_deb.py fails otherwise).
file(STRINGS ${PROJECT_SOURCE_DIR}/dist/debian/changelog chash_deb_top LIMIT_COUNT 1)
if(NOT chash_deb_top MATCHES "^chash \\(([^-)]+)-([^)]+)\\)")
  message(FATAL_ERROR "dist/debian/changelog: the first line is not `chash (VERSION-REVISION) ...`")
endif()
set(CHASH_DEB_UPSTREAM ${CMAKE_MATCH_1})
set(CHASH_DEB_REVISION ${CMAKE_MATCH_2})
if(NOT CHASH_DEB_UPSTREAM STREQUAL PROJECT_VERSION)
  message(WARNING "dist/debian/changelog is at ${CHASH_DEB_UPSTREAM}, the project at "
                  "${PROJECT_VERSION}: add a changelog entry for the package")
endif()

set(CHASH_DEB_DOC_DIR ${CMAKE_INSTALL_DATADIR}/doc/chash)
set(CHASH_DEB_STAGE ${PROJECT_BINARY_DIR}/deb)
file(MAKE_DIRECTORY ${CHASH_DEB_STAGE})
# Debian policy 12.7: changelog.Debian.gz, compressed with gzip -9n (no name, no time stamp).
configure_file(${PROJECT_SOURCE_DIR}/dist/debian/changelog ${CHASH_DEB_STAGE}/changelog.Debian
               COPYONLY)
add_custom_command(
    OUTPUT ${CHASH_DEB_STAGE}/changelog.Debian.gz
    COMMAND gzip -9nkf ${CHASH_DEB_STAGE}/changelog.Debian
    DEPENDS ${PROJECT_SOURCE_DIR}/dist/debian/changelog VERBATIM)
add_custom_target(chash_deb_files ALL DEPENDS ${CHASH_DEB_STAGE}/changelog.Debian.gz)
# EXCLUDE_FROM_ALL: only when the component is asked for (CPack does), not in `make install`.
install(FILES dist/debian/copyright ${CHASH_DEB_STAGE}/changelog.Debian.gz README.md
        DESTINATION ${CHASH_DEB_DOC_DIR} COMPONENT chash_deb EXCLUDE_FROM_ALL)
install(DIRECTORY docs/ DESTINATION ${CHASH_DEB_DOC_DIR} COMPONENT chash_deb EXCLUDE_FROM_ALL
        FILES_MATCHING PATTERN "*.md" PATTERN "compat" EXCLUDE PATTERN "images" EXCLUDE)

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME chash)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_VENDOR "chash")
set(CHASH_DEB_MAINTAINER "chash maintainers <maintainers@users.noreply.a-seed-9c5aea97.example>"
    CACHE STRING "The .deb's Maintainer field (also dist/debian/changelog's)")
set(CPACK_PACKAGE_CONTACT "${CHASH_DEB_MAINTAINER}")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "consistent hashing toolkit and nutcracker-compatible sharding proxy")
# The extended description (CPack puts the summary above it and indents each line).
set(CPACK_DEBIAN_PACKAGE_DESCRIPTION
    "chash decides which backend node owns a key or a client address, shows what
adding, removing or failing a node does to a cluster, and maps keys exactly as
the clients already in use do (libmemcached/twemproxy ketama, nginx, Jedis,
Guava, uhashring, Envoy, Redis Cluster, ...).
.
This package contains the chash command-line tool (route, analyze, migrate,
detect, rebalance, ...), chash-proxy, a multi-threaded Redis, memcached and TCP
sharding proxy that reads nutcracker.yml unchanged (with a systemd unit, an
example configuration and a Grafana dashboard), and libchash, the C++20
library both are built on (shared library, headers, CMake and pkg-config
files), with libchash_c, its stable C ABI.")
set(CPACK_DEBIAN_PACKAGE_VERSION ${CHASH_DEB_UPSTREAM})
set(CPACK_DEBIAN_PACKAGE_RELEASE ${CHASH_DEB_REVISION})
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)  # chash_VERSION-REVISION_ARCH.deb
set(CPACK_DEBIAN_PACKAGE_SECTION net)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)  # Depends from dpkg-shlibdeps over the ELF files
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS ON)  # DEBIAN/shlibs for libchash.so.MAJOR.MINOR
# Before 1.0 the SONAME changes with every minor release (CMakeLists.txt), so "=" is right.
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS_POLICY "=")
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "redis-server | memcached, bash-completion, prometheus")
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
    ${PROJECT_SOURCE_DIR}/dist/debian/conffiles ${PROJECT_SOURCE_DIR}/dist/debian/triggers
    ${PROJECT_SOURCE_DIR}/dist/debian/postinst ${PROJECT_SOURCE_DIR}/dist/debian/prerm
    ${PROJECT_SOURCE_DIR}/dist/debian/postrm)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION TRUE)
set(CPACK_DEBIAN_COMPRESSION_TYPE xz)
set(CPACK_STRIP_FILES ON)  # a RelWithDebInfo tree packs small binaries too
# Installed into a DESTDIR with the prefix /usr itself (not a staging prefix), so that the paths
# the unit is written with at install time are the package's.
set(CPACK_SET_DESTDIR ON)
set(CPACK_INSTALL_PREFIX /usr)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
# One package of these components (not the Python module: that is `pip install .`).
set(CPACK_INSTALL_CMAKE_PROJECTS "")
foreach(component chash_runtime chash_development chash_programs chash_deb)
  list(APPEND CPACK_INSTALL_CMAKE_PROJECTS ${PROJECT_BINARY_DIR} chash ${component} /)
endforeach()
set(CPACK_PACKAGE_DIRECTORY ${PROJECT_BINARY_DIR}/package)
include(CPack)
