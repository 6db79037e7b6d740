# SPDX-License-Identifier: Apache-2.0
# Installs chash-proxy.service and the sample chash-proxy.yml; run by `cmake --install` (the
# install(CODE) in CMakeLists.txt sets CHASH_SOURCE_DIR, CHASH_BINDIR, CHASH_SYSCONFDIR,
# CHASH_SYSTEMD_UNIT_DIR and CHASH_SCRATCH). CMAKE_INSTALL_PREFIX here is the install's own
# (`--prefix`, or /usr when CPack makes the .deb), so the unit names the binary where it lands.
# file(INSTALL) prepends $DESTDIR to these absolute paths, as to every other installed file.

# /usr's configuration lives in /etc (GNUInstallDirs, FHS), any other prefix's in <prefix>/etc.
if(IS_ABSOLUTE "${CHASH_SYSCONFDIR}")
  set(etc "${CHASH_SYSCONFDIR}")
elseif(CMAKE_INSTALL_PREFIX MATCHES "^/usr/?$")
  set(etc "/etc")
else()
  set(etc "${CMAKE_INSTALL_PREFIX}/${CHASH_SYSCONFDIR}")
endif()
# Debian 12 keeps units in /lib/systemd/system (debhelper puts them there; lintian's
# systemd-service-file-outside-lib); systemd reads both that and /usr/lib/systemd/system.
if(IS_ABSOLUTE "${CHASH_SYSTEMD_UNIT_DIR}")
  set(unitdir "${CHASH_SYSTEMD_UNIT_DIR}")
elseif(CMAKE_INSTALL_PREFIX MATCHES "^/usr/?$" AND CHASH_SYSTEMD_UNIT_DIR STREQUAL "lib/systemd/system")
  set(unitdir "/lib/systemd/system")
else()
  set(unitdir "${CMAKE_INSTALL_PREFIX}/${CHASH_SYSTEMD_UNIT_DIR}")
endif()
if(IS_ABSOLUTE "${CHASH_BINDIR}")
  set(CHASH_PROXY_BIN "${CHASH_BINDIR}/chash-proxy")
else()
  set(CHASH_PROXY_BIN "${CMAKE_INSTALL_PREFIX}/${CHASH_BINDIR}/chash-proxy")
endif()
string(REGEX REPLACE "/+" "/" CHASH_PROXY_BIN "${CHASH_PROXY_BIN}")
set(CHASH_PROXY_CONF "${etc}/chash-proxy/chash-proxy.yml")
string(REGEX REPLACE "/+" "/" CHASH_PROXY_CONF "${CHASH_PROXY_CONF}")

configure_file("${CHASH_SOURCE_DIR}/dist/chash-proxy.service.in"
               "${CHASH_SCRATCH}/chash-proxy.service" @ONLY)
file(INSTALL DESTINATION "${unitdir}" TYPE FILE FILES "${CHASH_SCRATCH}/chash-proxy.service")
file(INSTALL DESTINATION "${etc}/chash-proxy" TYPE FILE
     FILES "${CHASH_SOURCE_DIR}/dist/chash-proxy.yml")
