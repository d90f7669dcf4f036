// The caches the host's own builds trust, and what a sandboxed run whose writable root holds
// them (a workspace of $HOME) sees there instead (pure; linux/autorun_shield.h plans and makes
// the places, linux/sandbox_launch.cc binds them).
//
// A build reads its cache as code it already checked: cargo compiles the unpacked crate
// sources of ~/.cargo/registry (build.rs runs), go links what ~/.cache/go-build holds and
// trusts ~/go/pkg/mod without asking the checksum database again, pip installs the wheels of
// ~/.cache/pip, Gradle and Maven load the jars of their repositories, pre-commit runs the hook
// environments of ~/.cache/pre-commit, npx runs ~/.npm/_npx. A command that may write them
// plants code the user's next build outside the sandbox runs. Read-only would keep that out but
// break every build inside (a cache is written as it is used), so each cache place a writable
// root holds is, for the run, a directory of the workspace's sandbox home (policy/sandbox_home.h)
// bound over it: the tools inside find a cache at the usual path that works and lasts from one
// run of the workspace to the next, exactly as in any other workspace, and the host's own
// cache is neither seen nor changed. A missing place is made for the run (an empty directory,
// removed after it) so that the command cannot make it either. A profile (--profile rust)
// names the real cache as a writable root: the user's choice, which stays.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "policy/home_view.h"
#include "policy/host_autorun.h"
#include "policy/sandbox_policy.h"

namespace anvil {

enum class CacheBase : std::uint8_t {
  kHome,   // each home
  kCache,  // $XDG_CACHE_HOME, and each home's .cache
  kData,   // $XDG_DATA_HOME, and each home's .local/share
};

struct HostCache {
  CacheBase base;
  std::string_view path;  // relative to the base ("" for the base itself)
  std::string_view what;
};

// What a build or a tool on the host loads or runs from its cache without checking it again.
// The whole XDG cache directory, since new tools keep adding theirs there (go-build, pip, uv,
// pypoetry's virtualenvs, pre-commit, ccache, sccache, bazel and bazelisk, corepack's package
// managers, Playwright's and Puppeteer's browsers, node-gyp's headers, deno, huggingface's and
// torch hub's downloaded code, yarn); the rest by name.
inline constexpr HostCache kHostTrustedCaches[] = {
    {CacheBase::kCache, "", "every tool's cache: go-build, pip's wheels, pre-commit, ccache, ..."},
    {CacheBase::kHome, ".cargo/registry", "cargo: the crate sources it builds (build.rs runs)"},
    {CacheBase::kHome, ".cargo/git", "cargo: git dependencies' checkouts"},
    {CacheBase::kHome, "go/pkg", "go: the module cache and the checksum database's cache"},
    {CacheBase::kHome, ".npm", "npm: its cache, and npx's installs it runs"},
    {CacheBase::kHome, ".yarn", "yarn: its global cache"},
    {CacheBase::kHome, ".m2/repository", "Maven: jars and plugins"},
    {CacheBase::kHome, ".m2/wrapper", "the Maven wrapper's distributions"},
    {CacheBase::kHome, ".gradle/caches", "Gradle: jars, plugins, compiled build scripts"},
    {CacheBase::kHome, ".gradle/wrapper", "the Gradle wrapper's distributions"},
    {CacheBase::kHome, ".gradle/native", "Gradle: native libraries it loads"},
    {CacheBase::kHome, ".ivy2", "Ivy and sbt: jars"},
    {CacheBase::kHome, ".nuget/packages", "NuGet: packages, whose MSBuild files run"},
    {CacheBase::kHome, ".stack", "Haskell stack: snapshots and compilers"},
    {CacheBase::kHome, ".gem", "RubyGems' user installs and their commands"},
    {CacheBase::kHome, ".bundle", "Bundler: its cache"},
    {CacheBase::kHome, ".conda", "conda: packages and environments"},
    {CacheBase::kData, "virtualenv", "virtualenv: the seed wheels every new environment gets"},
    {CacheBase::kData, "virtualenvs", "pipenv: its environments"},
    {CacheBase::kData, "containers", "podman: the images whose layers run"},
};

// One cache place for `env`: where it is, and where it lives in the sandbox home instead
// (relative to that home: "go/pkg", ".cache" for the cache directory wherever it is).
struct HostCachePlace {
  std::string path;  // absolute, lexical
  std::string key;
  bool operator==(const HostCachePlace&) const = default;
};
// Every cache place in each home of `env` (and $XDG_CACHE_HOME, $XDG_DATA_HOME), each once.
std::vector<HostCachePlace> HostCachePlaces(const AutorunEnv& env);

// `binds` (the sandbox home's directories over the shadowed places, MappedBind::target the
// place) join view.mapped_binds, and what else the view would mount strictly beneath one of
// them goes (it protects or hides what the bind already hides), except what lies in a writable
// root beneath it (a profile's cache: shown over the bind). Returns those writable roots'
// paths relative to their bind's source: the mount points to make there first.
struct ShadowMountPoint {
  std::string source;    // the bind's source
  std::string relative;  // the writable root beneath its target, relative to it
  bool operator==(const ShadowMountPoint&) const = default;
};
std::vector<ShadowMountPoint> ShadowCachesInView(FileView& view,
                                                 const std::vector<MappedBind>& binds);

}  // namespace anvil
