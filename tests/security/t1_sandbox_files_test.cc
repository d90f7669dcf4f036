// T1 for the command sandbox: a sandboxed command cannot read or write outside its view.
#include <gtest/gtest.h>

#include "sandbox_harness.h"

namespace anvil::testing {
namespace t1_sandbox_files_test {
namespace {

TEST(T1SandboxFiles, ReadSecretOutsideWorkspaceByAbsolutePathIsDenied) {
  TempDir outside("anvil-secret");
  WriteFile(outside / "id_ed25519", "TOPSECRET");
  TempDir ws;
  WriteFile(ws / "hello.txt", "benign");
  auto benign = SandboxSh(ws.path(), "cat hello.txt");
  EXPECT_EQ(benign.status, 0) << benign.err;
  EXPECT_EQ(benign.out, "benign");
  auto attack = SandboxSh(ws.path(), "cat " + outside.path() + "/id_ed25519");
  EXPECT_NE(attack.status, 0);
  EXPECT_EQ(attack.out.find("TOPSECRET"), std::string::npos);
}

}  // namespace
}  // namespace t1_sandbox_files_test
}  // namespace anvil::testing
