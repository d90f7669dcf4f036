#!/usr/bin/env bash
# Builds Anvil's Debian package, build/package/anvil_<version>_amd64.deb, and checks it with
# lintian (errors fail the build). The version is project(VERSION) in CMakeLists.txt; CPack
# makes the package from the install rules (cmake/Install.cmake), Depends: from dpkg-shlibdeps.
#   scripts/package.sh            install what is missing, build (release preset), package
# Environment: ANVIL_JOBS (parallel jobs), ANVIL_LINTIAN=0 to skip lintian,
#   ANVIL_SKIP_DEPS=1 to skip scripts/install-deps.sh (scripts/test.sh has run it),
#   ANVIL_PACKAGE_PRESET (default release): the build to package; scripts/test.sh packages the
#   dev build it has just built and tested (same install rules and files; a Debug build).
# Install it with `apt-get install ./build/package/anvil_*.deb`; see docs/install.md.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs="${ANVIL_JOBS:-$(nproc)}"
[[ "${ANVIL_SKIP_DEPS:-0}" == 1 ]] || scripts/install-deps.sh
preset="${ANVIL_PACKAGE_PRESET:-release}"
cmake --preset "$preset" >/dev/null
# What the package holds, not the test binaries.
cmake --build --preset "$preset" -j "$jobs" --target anvil anvil-gateway anvil-gateway-offline \
  anvil-plugin-host anvil-exec-runner anvil-proxy anvil_docs anvil_changelog
rm -rf build/package
cpack --config "build/$preset/CPackConfig.cmake" -B "$PWD/build/package" >build/package.log 2>&1 \
  || { cat build/package.log >&2; exit 1; }
rm -rf build/package/_CPack_Packages
shopt -s nullglob
debs=(build/package/anvil_*_amd64.deb build/package/anvil_*_"$(dpkg --print-architecture)".deb)
[[ ${#debs[@]} -gt 0 ]] || { echo "package.sh: cpack made no anvil_*.deb" >&2; exit 1; }
deb=${debs[0]}
if [[ "${ANVIL_LINTIAN:-1}" != 0 ]]; then
  # Errors fail; warnings are shown, on stderr: the last line on stdout is the package's path.
  # --allow-root: CI runs as root.
  lintian --allow-root --fail-on error --suppress-tags-from-file /dev/null "$deb" >&2
fi
echo "$deb"
