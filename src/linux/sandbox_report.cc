#include "linux/sandbox_report.h"

#include <unistd.h>

#include <cstring>

namespace anvil::launch {

void SendRecord(int fd, RecordKind kind, int value, int err, const std::string& message,
                uint32_t layers) {
  Record r{};
  r.kind = kind;
  r.value = value;
  r.err = err;
  r.layers = layers;
  std::strncpy(r.message, message.c_str(), sizeof(r.message) - 1);
  ssize_t ignored = ::write(fd, &r, sizeof(r));
  (void)ignored;
}

}  // namespace anvil::launch
