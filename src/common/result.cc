#include "common/result.h"

#include <cstring>

namespace anvil {

tl::unexpected<Error> SysFail(ErrorCode code, std::string_view what, int sys_errno) {
  std::string message(what);
  message += ": ";
  message += std::strerror(sys_errno);
  return tl::unexpected<Error>(Error{code, std::move(message), sys_errno});
}

}  // namespace anvil
