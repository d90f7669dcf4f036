# cmake/ThirdParty.cmake -- vendored-at-build-time third-party code.
#
# Sources are NOT in the repository: scripts/install-deps.sh fetches the pinned,
# sha256-verified upstream tarballs (from Debian trixie source packages) into
# ${ANVIL_DEPS_DIR}/src/{quickjs,lua}. This file only builds them.
#
# Targets (STATIC, position-independent, compiled as C with warnings off):
#   anvil_lua      / anvil::lua      Lua 5.4.7 core + safe-ish std libs
#                                    (base, coroutine, math, string, table,
#                                    utf8). NOT io, os, package, debug, linit:
#                                    luaL_openlibs/luaopen_io/... do not link.
#                                    C++: #include <lua.h> (Lua is built as C++).
#   anvil_quickjs  / anvil::quickjs  QuickJS 2025-04-26 engine, without
#                                    quickjs-libc (no std/os modules).
#                                    #include <quickjs.h>
#
# Include directories are exported as SYSTEM and contain only the public
# headers (copied into the build tree), so project code compiled with
# -Wall -Wextra -Wpedantic -Werror can include them.
include_guard(GLOBAL)

enable_language(C)
find_package(Threads REQUIRED)

# Default mirrors scripts/install-deps.sh: $ANVIL_DEPS_DIR if set in the
# environment, else <repo>/.deps (<repo> = parent of this file's directory,
# which is CMAKE_SOURCE_DIR unless Anvil is built as a subproject).
if(DEFINED ENV{ANVIL_DEPS_DIR} AND NOT "$ENV{ANVIL_DEPS_DIR}" STREQUAL "")
    set(_anvil_deps_default "$ENV{ANVIL_DEPS_DIR}")
else()
    get_filename_component(_anvil_deps_default "${CMAKE_CURRENT_LIST_DIR}/../.deps" ABSOLUTE)
endif()
set(ANVIL_DEPS_DIR "${_anvil_deps_default}" CACHE PATH
    "Directory populated by scripts/install-deps.sh (third-party sources)")

set(ANVIL_QUICKJS_VERSION "2025-04-26")
set(ANVIL_LUA_VERSION "5.4.7")

set(_anvil_lua_dir "${ANVIL_DEPS_DIR}/src/lua")
set(_anvil_qjs_dir "${ANVIL_DEPS_DIR}/src/quickjs")
string(CONCAT _anvil_tp_hint
    "Run scripts/install-deps.sh from the repository root to fetch them (or, "
    "for a custom location, `ANVIL_DEPS_DIR=<dir> scripts/install-deps.sh` and "
    "configure with -DANVIL_DEPS_DIR=<dir>).")

# --- sanity checks ------------------------------------------------------------
set(_anvil_lua_core
    lapi lcode lctype ldebug ldo ldump lfunc lgc llex lmem lobject lopcodes
    lparser lstate lstring ltable ltm lundump lvm lzio)
set(_anvil_lua_libs
    lauxlib lbaselib lcorolib lmathlib lstrlib ltablib lutf8lib)
set(_anvil_lua_public_headers lua.h luaconf.h lualib.h lauxlib.h lua.hpp)
set(_anvil_qjs_sources quickjs.c libregexp.c libunicode.c cutils.c dtoa.c)

set(_anvil_missing "")
foreach(_f IN LISTS _anvil_lua_core _anvil_lua_libs)
    if(NOT EXISTS "${_anvil_lua_dir}/src/${_f}.c")
        list(APPEND _anvil_missing "${_anvil_lua_dir}/src/${_f}.c")
    endif()
endforeach()
foreach(_f IN LISTS _anvil_lua_public_headers)
    if(NOT EXISTS "${_anvil_lua_dir}/src/${_f}")
        list(APPEND _anvil_missing "${_anvil_lua_dir}/src/${_f}")
    endif()
endforeach()
foreach(_f IN LISTS _anvil_qjs_sources ITEMS quickjs.h VERSION)
    if(NOT EXISTS "${_anvil_qjs_dir}/${_f}")
        list(APPEND _anvil_missing "${_anvil_qjs_dir}/${_f}")
    endif()
endforeach()
if(_anvil_missing)
    list(LENGTH _anvil_missing _anvil_n)
    list(SUBLIST _anvil_missing 0 3 _anvil_missing)
    list(JOIN _anvil_missing "\n  " _anvil_missing_str)
    string(CONCAT _anvil_msg
        "Third-party sources (QuickJS ${ANVIL_QUICKJS_VERSION}, Lua ${ANVIL_LUA_VERSION}) "
        "not found in ANVIL_DEPS_DIR=${ANVIL_DEPS_DIR} (${_anvil_n} files missing, e.g.\n  "
        "${_anvil_missing_str})\n" "${_anvil_tp_hint}")
    message(FATAL_ERROR "${_anvil_msg}")
endif()

# Versions must match the pins (a stale .deps from an older pin is an error).
file(STRINGS "${_anvil_qjs_dir}/VERSION" _anvil_qjs_found LIMIT_COUNT 1)
if(NOT _anvil_qjs_found STREQUAL ANVIL_QUICKJS_VERSION)
    message(FATAL_ERROR
        "QuickJS in ${_anvil_qjs_dir} is '${_anvil_qjs_found}', expected "
        "'${ANVIL_QUICKJS_VERSION}'. " "${_anvil_tp_hint}")
endif()
file(STRINGS "${_anvil_lua_dir}/src/lua.h" _anvil_lua_ver_lines
     REGEX "^#define LUA_VERSION_(MAJOR|MINOR|RELEASE)[ \t]+\"[0-9]+\"")
set(_anvil_lua_found "")
foreach(_part MAJOR MINOR RELEASE)
    foreach(_l IN LISTS _anvil_lua_ver_lines)
        if(_l MATCHES "LUA_VERSION_${_part}[ \t]+\"([0-9]+)\"")
            list(APPEND _anvil_lua_found "${CMAKE_MATCH_1}")
        endif()
    endforeach()
endforeach()
list(JOIN _anvil_lua_found "." _anvil_lua_found)
if(NOT _anvil_lua_found STREQUAL ANVIL_LUA_VERSION)
    message(FATAL_ERROR
        "Lua in ${_anvil_lua_dir} is '${_anvil_lua_found}', expected "
        "'${ANVIL_LUA_VERSION}'. " "${_anvil_tp_hint}")
endif()

# Anvil's own patches (scripts/patches/<name>/) must all be applied: the stamp names them.
foreach(_name lua quickjs)
    file(GLOB _anvil_own_patches LIST_DIRECTORIES false CONFIGURE_DEPENDS
         "${CMAKE_CURRENT_LIST_DIR}/../scripts/patches/${_name}/*.patch")
    set(_anvil_own_names "")
    foreach(_p IN LISTS _anvil_own_patches)
        get_filename_component(_p "${_p}" NAME)
        list(APPEND _anvil_own_names "${_p}")
    endforeach()
    list(SORT _anvil_own_names)
    list(JOIN _anvil_own_names " " _anvil_own_expected)
    set(_anvil_own_found "(no stamp)")
    set(_stamp "${ANVIL_DEPS_DIR}/src/${_name}/.anvil-stamp")
    if(EXISTS "${_stamp}")
        set(_anvil_own_found "")
        file(STRINGS "${_stamp}" _anvil_own_line REGEX "^anvil_patches=")
        if(_anvil_own_line MATCHES "^anvil_patches=(.*)$")
            set(_anvil_own_found "${CMAKE_MATCH_1}")
        elseif(NOT _anvil_own_expected STREQUAL "")
            set(_anvil_own_found "(none recorded)")
        endif()
    endif()
    if(NOT _anvil_own_found STREQUAL _anvil_own_expected)
        message(FATAL_ERROR
            "${_name} in ${ANVIL_DEPS_DIR}/src/${_name} was extracted without Anvil's patches "
            "'${_anvil_own_expected}' (its stamp says '${_anvil_own_found}'). "
            "${_anvil_tp_hint}")
    endif()
endforeach()

# Re-configure when install-deps.sh re-extracts the sources.
foreach(_stamp "${_anvil_lua_dir}/.anvil-stamp" "${_anvil_qjs_dir}/.anvil-stamp")
    if(EXISTS "${_stamp}")
        set_property(DIRECTORY "${CMAKE_SOURCE_DIR}" APPEND PROPERTY
                     CMAKE_CONFIGURE_DEPENDS "${_stamp}")
    endif()
endforeach()

# --- public headers, copied so the include dirs expose nothing else -----------
set(_anvil_tp_inc "${CMAKE_BINARY_DIR}/_anvil_thirdparty/include")
foreach(_h IN LISTS _anvil_lua_public_headers)
    configure_file("${_anvil_lua_dir}/src/${_h}" "${_anvil_tp_inc}/lua/${_h}" COPYONLY)
endforeach()
configure_file("${_anvil_qjs_dir}/quickjs.h" "${_anvil_tp_inc}/quickjs/quickjs.h" COPYONLY)

# Common settings for third-party C targets: no warnings (-w also neutralises
# any -Werror inherited from directory-level compile options), no static
# analysers, PIC.
function(_anvil_thirdparty_target tgt)
    set_target_properties(${tgt} PROPERTIES
        POSITION_INDEPENDENT_CODE ON
        C_EXTENSIONS ON
        C_STANDARD_REQUIRED ON
        C_CLANG_TIDY ""
        C_CPPCHECK ""
        C_INCLUDE_WHAT_YOU_USE ""
        UNITY_BUILD OFF)
    target_compile_options(${tgt} PRIVATE -w)
endfunction()

# --- Lua 5.4.7 ----------------------------------------------------------------
set(_anvil_lua_srcs "")
foreach(_f IN LISTS _anvil_lua_core _anvil_lua_libs)
    list(APPEND _anvil_lua_srcs "${_anvil_lua_dir}/src/${_f}.c")
endforeach()
add_library(anvil_lua STATIC ${_anvil_lua_srcs})
_anvil_thirdparty_target(anvil_lua)
# Upstream builds with -std=gnu99. No LUA_USE_POSIX/LUA_USE_LINUX: on glibc it
# only swaps setjmp for _setjmp in ldo.c (same semantics there) and otherwise
# affects the excluded io/os/package libs. No LUA_COMPAT_5_3: plain 5.4.
# Compiled as C++: lua_error then unwinds with an exception instead of longjmp, so the C++
# destructors in Anvil's bindings (strings, fds, Results) run when a plugin error crosses
# them. Consumers include <lua.h>/<lauxlib.h> directly, NOT <lua.hpp> (no extern "C").
set_source_files_properties(${_anvil_lua_srcs} PROPERTIES LANGUAGE CXX)
set_target_properties(anvil_lua PROPERTIES LINKER_LANGUAGE CXX)
target_include_directories(anvil_lua PRIVATE "${_anvil_lua_dir}/src")
target_include_directories(anvil_lua SYSTEM INTERFACE "${_anvil_tp_inc}/lua")
target_link_libraries(anvil_lua PRIVATE m)
add_library(anvil::lua ALIAS anvil_lua)

# --- QuickJS 2025-04-26 -------------------------------------------------------
set(_anvil_qjs_srcs "")
foreach(_f IN LISTS _anvil_qjs_sources)
    list(APPEND _anvil_qjs_srcs "${_anvil_qjs_dir}/${_f}")
endforeach()
add_library(anvil_quickjs STATIC ${_anvil_qjs_srcs})
_anvil_thirdparty_target(anvil_quickjs)
set_target_properties(anvil_quickjs PROPERTIES C_STANDARD 11) # <stdatomic.h>
target_include_directories(anvil_quickjs PRIVATE "${_anvil_qjs_dir}")
target_include_directories(anvil_quickjs SYSTEM INTERFACE "${_anvil_tp_inc}/quickjs")
# As the upstream Makefile: DEFINES and -fwrapv ("ensure that signed overflows
# behave as expected" -- the engine relies on it).
target_compile_definitions(anvil_quickjs PRIVATE
    _GNU_SOURCE
    "CONFIG_VERSION=\"${ANVIL_QUICKJS_VERSION}\"")
target_compile_options(anvil_quickjs PRIVATE -fwrapv)
# quickjs.h's value macros (JS_UNDEFINED, JS_NULL, JS_TRUE, JS_EXCEPTION,
# JS_MKPTR, ...) expand to C99 compound literals *in the caller's code*, which
# clang (unlike gcc) reports under -Wpedantic even though the macro comes from a
# system header. Silence that one group for C++ consumers built with clang.
# (JS_NAN cannot be used from C++ at all -- g++ rejects its nested designator;
# use JS_NewFloat64(ctx, NAN).)
target_compile_options(anvil_quickjs INTERFACE
    "$<$<COMPILE_LANG_AND_ID:CXX,Clang,AppleClang>:-Wno-c99-extensions>")
# Atomics/SharedArrayBuffer support uses pthreads.
target_link_libraries(anvil_quickjs PRIVATE m Threads::Threads)
add_library(anvil::quickjs ALIAS anvil_quickjs)

unset(_anvil_missing)
unset(_anvil_lua_srcs)
unset(_anvil_qjs_srcs)
