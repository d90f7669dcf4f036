// The seccomp programs the binaries carry are compiled at build time (anvil-seccomp-gen). They
// must be exactly what libseccomp makes of the rules now, for every policy and this arch: a rule
// changed without the constants following (or the other way round) fails here.
#include <gtest/gtest.h>
#include <linux/audit.h>

#include <cstring>
#include <vector>

#include "linux/seccomp.h"
#include "linux/seccomp_compile.h"

namespace anvil::seccomp {
namespace seccomp_precompiled_test {
namespace {

bool SameBytes(const std::vector<sock_filter>& a, const std::vector<sock_filter>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(a[0])) == 0;
}

TEST(SeccompPrecompiledTest, CommandFiltersAreByteIdenticalToAFreshCompile) {
  for (NetworkMode network : {NetworkMode::kNone, NetworkMode::kProxy, NetworkMode::kFull}) {
    for (bool deny_list : {true, false}) {
      SCOPED_TRACE(std::string(ToString(network)) + (deny_list ? " deny-list" : " network-only"));
      auto baked = BuildCommandFilter(network, deny_list);
      auto fresh = CompileCommandFilter(network, deny_list);
      ASSERT_TRUE(baked) << baked.error().ToString();
      ASSERT_TRUE(fresh) << fresh.error().ToString();
      EXPECT_TRUE(SameBytes(baked->insns(), *fresh))
          << baked->size() << " baked vs " << fresh->size() << " fresh instructions";
    }
  }
}

TEST(SeccompPrecompiledTest, TracingFiltersAreByteIdenticalToAFreshCompile) {
  for (NetworkMode network : {NetworkMode::kNone, NetworkMode::kProxy, NetworkMode::kFull}) {
    for (bool own_net : {false, true}) {
      if (own_net && network != NetworkMode::kNone) continue;
      SCOPED_TRACE(std::string(ToString(network)) + (own_net ? " own network namespace" : ""));
      auto baked = BuildCommandFilter(network, true, own_net, /*allow_tracing=*/true);
      auto fresh = CompileCommandFilter(network, true, true, own_net, /*allow_tracing=*/true);
      ASSERT_TRUE(baked) << baked.error().ToString();
      ASSERT_TRUE(fresh) << fresh.error().ToString();
      EXPECT_TRUE(SameBytes(baked->insns(), *fresh));
      // A program of its own: the one without tracing keeps its rows.
      auto strict = BuildCommandFilter(network, true, own_net, /*allow_tracing=*/false);
      ASSERT_TRUE(strict);
      EXPECT_FALSE(SameBytes(baked->insns(), strict->insns()));
    }
  }
  // Without the deny-list (external-sandbox) there is nothing to leave out.
  auto net_only = BuildCommandFilter(NetworkMode::kNone, false, false, true);
  auto net_only_strict = BuildCommandFilter(NetworkMode::kNone, false, false, false);
  ASSERT_TRUE(net_only && net_only_strict);
  EXPECT_TRUE(SameBytes(net_only->insns(), net_only_strict->insns()));
}

TEST(SeccompPrecompiledTest, ServiceFilterIsByteIdenticalToAFreshCompile) {
  auto baked = BuildServiceFilter();
  auto fresh = CompileCommandFilter(NetworkMode::kFull, true, /*set_id_rules=*/false);
  ASSERT_TRUE(baked) << baked.error().ToString();
  ASSERT_TRUE(fresh) << fresh.error().ToString();
  EXPECT_TRUE(SameBytes(baked->insns(), *fresh));
}

TEST(SeccompPrecompiledTest, OwnNetworkNamespaceFilterIsByteIdenticalToAFreshCompile) {
  auto baked = BuildCommandFilter(NetworkMode::kNone, true, /*own_network_namespace=*/true);
  auto fresh = CompileCommandFilter(NetworkMode::kNone, true, /*set_id_rules=*/true,
                                    /*own_network_namespace=*/true);
  ASSERT_TRUE(baked) << baked.error().ToString();
  ASSERT_TRUE(fresh) << fresh.error().ToString();
  EXPECT_TRUE(SameBytes(baked->insns(), *fresh));
  // It is a filter of its own, and only for a command that has its own namespace.
  auto strict = BuildCommandFilter(NetworkMode::kNone, true, false);
  ASSERT_TRUE(strict);
  EXPECT_FALSE(SameBytes(baked->insns(), strict->insns()));
  auto unconfined = BuildCommandFilter(NetworkMode::kNone, /*deny_list=*/false, true);
  auto unconfined_strict = BuildCommandFilter(NetworkMode::kNone, false, false);
  ASSERT_TRUE(unconfined && unconfined_strict);
  EXPECT_TRUE(SameBytes(unconfined->insns(), unconfined_strict->insns()));
}

TEST(SeccompPrecompiledTest, PluginHostFilterIsByteIdenticalToAFreshCompile) {
  auto baked = BuildPluginHostFilter();
  auto fresh = CompilePluginHostFilter();
  ASSERT_TRUE(baked) << baked.error().ToString();
  ASSERT_TRUE(fresh) << fresh.error().ToString();
  EXPECT_TRUE(SameBytes(baked->insns(), *fresh));
}

TEST(SeccompPrecompiledTest, ProgramsCheckTheArchitectureFirst) {
  // libseccomp's prologue: load seccomp_data.arch, compare with this build's arch. A program
  // baked for another arch would be caught above; this pins the shape the kernel relies on.
  auto baked = BuildPluginHostFilter();
  ASSERT_TRUE(baked);
  ASSERT_GE(baked->size(), 2u);
  EXPECT_EQ(baked->insns()[0].code, BPF_LD | BPF_W | BPF_ABS);
  EXPECT_EQ(baked->insns()[0].k, 4u);  // offsetof(seccomp_data, arch)
#if defined(__x86_64__)
  EXPECT_EQ(baked->insns()[1].k, static_cast<uint32_t>(AUDIT_ARCH_X86_64));
#endif
}

}  // namespace
}  // namespace seccomp_precompiled_test
}  // namespace anvil::seccomp
