// The parsers behind a sys.exec tool's runtime files (linux/tool_runtime.h): the ELF interpreter
// of an executable image and the dynamic loader's --list answer.
#include "linux/tool_runtime.h"

#include <elf.h>
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

namespace anvil {
namespace tool_runtime_test {
namespace {

// A 64-bit little-endian ELF header with one program header of `type`, whose contents (at
// offset 0x100) are `interp`.
std::string Image64(uint32_t type, const std::string& interp, size_t size = 0x200) {
  std::string image(size, '\0');
  Elf64_Ehdr eh{};
  std::memcpy(eh.e_ident, ELFMAG, SELFMAG);
  eh.e_ident[EI_CLASS] = ELFCLASS64;
  eh.e_ident[EI_DATA] = ELFDATA2LSB;
  eh.e_phoff = sizeof(Elf64_Ehdr);
  eh.e_phentsize = sizeof(Elf64_Phdr);
  eh.e_phnum = 1;
  std::memcpy(image.data(), &eh, sizeof(eh));
  Elf64_Phdr ph{};
  ph.p_type = type;
  ph.p_offset = 0x100;
  ph.p_filesz = interp.size() + 1;
  std::memcpy(image.data() + sizeof(eh), &ph, sizeof(ph));
  if (0x100 + interp.size() < image.size())
    std::memcpy(image.data() + 0x100, interp.data(), interp.size());
  return image;
}

TEST(ToolRuntime, TheInterpreterComesFromPtInterp) {
  auto interp = ElfInterpreter(Image64(PT_INTERP, "/lib64/ld-linux-x86-64.so.2"));
  ASSERT_TRUE(interp) << interp.error().ToString();
  EXPECT_EQ(*interp, "/lib64/ld-linux-x86-64.so.2");
  // A static executable has none.
  auto none = ElfInterpreter(Image64(PT_LOAD, "ignored"));
  ASSERT_TRUE(none);
  EXPECT_EQ(*none, "");
}

TEST(ToolRuntime, AnythingElseIsRefusedNotGuessed) {
  EXPECT_FALSE(ElfInterpreter("#!/bin/sh\necho hi\n"));  // a script
  EXPECT_FALSE(ElfInterpreter(""));
  EXPECT_FALSE(ElfInterpreter(Image64(PT_INTERP, "relative/ld.so")));  // not absolute
  EXPECT_FALSE(ElfInterpreter(Image64(PT_INTERP, "/ld", 0x101)));      // cut off
  std::string big_endian = Image64(PT_INTERP, "/ld.so");
  big_endian[EI_DATA] = ELFDATA2MSB;
  EXPECT_FALSE(ElfInterpreter(big_endian));
  std::string truncated = Image64(PT_INTERP, "/ld.so").substr(0, 20);
  EXPECT_FALSE(ElfInterpreter(truncated));
  // Program headers claimed beyond the bytes given.
  std::string far = Image64(PT_INTERP, "/ld.so");
  Elf64_Ehdr eh{};
  std::memcpy(&eh, far.data(), sizeof(eh));
  eh.e_phoff = 1u << 30;
  std::memcpy(far.data(), &eh, sizeof(eh));
  EXPECT_FALSE(ElfInterpreter(far));
}

TEST(ToolRuntime, TheLoadersListGivesThePathsItOpens) {
  const std::string output =
      "\tlinux-vdso.so.1 (0x00007ffd4a3f2000)\n"
      "\tlibpcre2-8.so.0 => /lib/x86_64-linux-gnu/libpcre2-8.so.0 (0x00007f7968898000)\n"
      "\tlibgcc_s.so.1 => /lib/x86_64-linux-gnu/libgcc_s.so.1 (0x00007f7968878000)\n"
      "\tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x00007f796813e000)\n"
      "\t/lib64/ld-linux-x86-64.so.2 (0x00007f7968947000)\n";
  auto paths = ParseLoaderList(output);
  ASSERT_TRUE(paths) << paths.error().ToString();
  EXPECT_EQ(*paths,
            (std::vector<std::string>{
                "/lib/x86_64-linux-gnu/libpcre2-8.so.0", "/lib/x86_64-linux-gnu/libgcc_s.so.1",
                "/lib/x86_64-linux-gnu/libc.so.6", "/lib64/ld-linux-x86-64.so.2"}));
  auto missing = ParseLoaderList("\tlibfoo.so.1 => not found\n");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, "not_found");
  EXPECT_FALSE(ParseLoaderList("\tlibfoo.so => relative/libfoo.so (0x1)\n"));
  EXPECT_FALSE(ParseLoaderList("statically linked\n"));
  auto empty = ParseLoaderList("");
  ASSERT_TRUE(empty);
  EXPECT_TRUE(empty->empty());
}

}  // namespace
}  // namespace tool_runtime_test
}  // namespace anvil
