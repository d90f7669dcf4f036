# `cmake --install BUILD --prefix P` and the Debian package (scripts/package.sh, CPack):
#   P/bin/anvil                      P/libexec/anvil/{anvil-gateway,anvil-gateway-offline,
#                                                     anvil-plugin-host,anvil-exec-runner,
#                                                     anvil-proxy}
#   P/share/man/man1/anvil*.1.gz     P/share/doc/anvil/{README.md,docs/,copyright,changelog.gz}
#   P/share/anvil/examples/          P/share/nvim/site/pack/anvil/start/anvil/ (editors/nvim)
#   P/share/bash-completion/completions/anvil   P/share/zsh/vendor-completions/_anvil
#   P/share/fish/vendor_completions.d/anvil.fish
# `anvil` finds its helpers from its own location (src/linux/helper_executable.h), so the tree
# works under any prefix. The examples live in share/anvil/, not share/doc/: they are run
# (`anvil run /usr/share/anvil/examples/plugins/hello-lua summary`), and Debian lets systems
# drop /usr/share/doc.
include(GNUInstallDirs)

install(TARGETS anvil RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(TARGETS anvil-gateway anvil-gateway-offline anvil-plugin-host anvil-exec-runner anvil-proxy
  RUNTIME DESTINATION ${ANVIL_HELPER_INSTALL_DIR})

install(FILES README.md DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(DIRECTORY docs/ DESTINATION ${CMAKE_INSTALL_DOCDIR}/docs)
install(FILES packaging/debian/copyright DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(DIRECTORY examples/ DESTINATION ${CMAKE_INSTALL_DATADIR}/anvil/examples)
install(DIRECTORY editors/nvim/ DESTINATION ${CMAKE_INSTALL_DATADIR}/nvim/site/pack/anvil/start/anvil)

install(DIRECTORY ${ANVIL_DOCS_DIR}/man/man1/ DESTINATION ${CMAKE_INSTALL_MANDIR}/man1
  FILES_MATCHING PATTERN "*.1.gz")
install(FILES ${ANVIL_DOCS_DIR}/completions/anvil
  DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions)
install(FILES ${ANVIL_DOCS_DIR}/completions/_anvil
  DESTINATION ${CMAKE_INSTALL_DATADIR}/zsh/vendor-completions)
install(FILES ${ANVIL_DOCS_DIR}/completions/anvil.fish
  DESTINATION ${CMAKE_INSTALL_DATADIR}/fish/vendor_completions.d)

# Debian's changelog (required in every package) and the lintian overrides, with their reasons.
set(ANVIL_MAINTAINER "Anvil maintainers <anvil@example.org>")
set(ANVIL_VERSION ${PROJECT_VERSION})
string(TIMESTAMP ANVIL_CHANGELOG_DATE "%a, %d %b %Y %H:%M:%S +0000" UTC)
configure_file(packaging/debian/changelog.in ${CMAKE_BINARY_DIR}/packaging/changelog @ONLY)
add_custom_command(OUTPUT ${CMAKE_BINARY_DIR}/packaging/changelog.gz
  COMMAND sh -c "gzip -9n -c \"$1\" > \"$1.gz\"" sh ${CMAKE_BINARY_DIR}/packaging/changelog
  DEPENDS ${CMAKE_BINARY_DIR}/packaging/changelog
  VERBATIM)
add_custom_target(anvil_changelog ALL DEPENDS ${CMAKE_BINARY_DIR}/packaging/changelog.gz)
install(FILES ${CMAKE_BINARY_DIR}/packaging/changelog.gz DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(FILES packaging/debian/lintian-overrides
  DESTINATION ${CMAKE_INSTALL_DATADIR}/lintian/overrides RENAME anvil)

# The package: scripts/package.sh runs `cpack` in the release build.
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME anvil)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "${ANVIL_MAINTAINER}")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "run untrusted editor plugins and commands in kernel sandboxes")
set(CPACK_DEBIAN_PACKAGE_DESCRIPTION
  "Anvil runs untrusted editor plugins (Lua 5.4, QuickJS) and untrusted\n"
  "commands on Linux behind several independent kernel walls: a private\n"
  "mount view, Landlock, seccomp-bpf, user, pid and network namespaces,\n"
  "no_new_privs and resource limits. If a wall the policy needs cannot be\n"
  "built, nothing runs.\n"
  "\n"
  "This package holds the anvil command (sandbox, run, serve, plugin, audit,\n"
  "doctor), its helpers in /usr/libexec/anvil, man pages, completions for\n"
  "bash, zsh and fish, the Neovim client, example plugins and the user\n"
  "guide.")
string(REPLACE ";" "" CPACK_DEBIAN_PACKAGE_DESCRIPTION "${CPACK_DEBIAN_PACKAGE_DESCRIPTION}")
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION utils)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
# Depends: the shared libraries the binaries load (libcurl, OpenSSL, c-ares, libc), from
# dpkg-shlibdeps; nothing else.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# sys.exec's tools and the editor the bundled client is for.
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "ripgrep, fd-find")
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "neovim")
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
include(CPack)
