#include "net/fetcher.h"

#include <curl/curl.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>

#include "common/ascii.h"

namespace anvil {

namespace {

using Clock = std::chrono::steady_clock;

void GlobalInitOnce() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

std::string_view Trim(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t' || text.back() == '\r' ||
                           text.back() == '\n')) {
    text.remove_suffix(1);
  }
  return text;
}

// Everything the callbacks see of one transfer.
struct Transfer {
  const ConnectPolicy* policy = nullptr;
  IpAddress target;
  std::uint16_t port = 0;
  std::uint64_t max_body = 0;
  std::uint64_t max_header = 0;

  std::string body;
  bool body_over = false;
  std::vector<HttpHeader> headers;
  std::uint64_t header_bytes = 0;
  bool headers_over = false;
  std::optional<std::string> refused;  // why the open-socket check said no
  const std::atomic<bool>* cancelled = nullptr;
};

int OnProgress(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  const auto* t = static_cast<const Transfer*>(user);
  return t->cancelled != nullptr && t->cancelled->load(std::memory_order_acquire) ? 1 : 0;
}

std::size_t OnBody(char* data, std::size_t size, std::size_t count, void* user) {
  auto* t = static_cast<Transfer*>(user);
  const std::size_t n = size * count;
  // Decompressed bytes: the only count a compression bomb cannot lie about.
  if (t->body.size() + n > t->max_body) {
    t->body_over = true;
    return 0;  // != n: libcurl aborts with CURLE_WRITE_ERROR
  }
  t->body.append(data, n);
  return n;
}

std::size_t OnHeader(char* data, std::size_t size, std::size_t count, void* user) {
  auto* t = static_cast<Transfer*>(user);
  const std::size_t n = size * count;
  t->header_bytes += n;
  if (t->header_bytes > t->max_header) {
    t->headers_over = true;
    return 0;
  }
  const std::string_view line(data, n);
  if (line.rfind("HTTP/", 0) == 0) {
    t->headers.clear();  // a new response (after a 1xx): only the final one is returned
    return n;
  }
  const auto colon = line.find(':');
  if (colon == std::string_view::npos || colon == 0) return n;  // blank line, obs-fold
  t->headers.push_back(
      {AsciiLower(Trim(line.substr(0, colon))), std::string(Trim(line.substr(colon + 1)))});
  return n;
}

// The last check before a byte leaves: the address libcurl is about to dial must be the planned
// one and still pass the policy. Anything else (a different address, a family the policy does
// not know, a second connection for some libcurl feature) gets no socket.
curl_socket_t OnOpenSocket(void* user, curlsocktype purpose, curl_sockaddr* address) {
  auto* t = static_cast<Transfer*>(user);
  if (purpose != CURLSOCKTYPE_IPCXN) {
    t->refused = "unexpected socket purpose";
    return CURL_SOCKET_BAD;
  }
  const auto dialled = IpAddress::FromSockaddr(&address->addr);
  if (!dialled) {
    t->refused = "address family " + std::to_string(address->family);
    return CURL_SOCKET_BAD;
  }
  std::uint16_t port = 0;
  if (address->family == AF_INET) {
    port = ntohs(reinterpret_cast<const sockaddr_in*>(&address->addr)->sin_port);
  } else {
    port = ntohs(reinterpret_cast<const sockaddr_in6*>(&address->addr)->sin6_port);
  }
  const std::string shown = dialled->ToString() + " port " + std::to_string(port);
  if (!(*dialled == t->target) || port != t->port) {
    t->refused = shown + " is not the validated address " + t->target.ToString();
    return CURL_SOCKET_BAD;
  }
  const AddressVerdict verdict = t->policy->Check(*dialled, port);
  if (!verdict.allowed) {
    t->refused = shown + ": " + verdict.reason;
    return CURL_SOCKET_BAD;
  }
  return ::socket(address->family, address->socktype | SOCK_CLOEXEC, address->protocol);
}

struct EasyDeleter {
  void operator()(CURL* easy) const { curl_easy_cleanup(easy); }
};
struct SlistDeleter {
  void operator()(curl_slist* list) const { curl_slist_free_all(list); }
};

// Collects the first failing curl_easy_setopt: an option that cannot be set is a refusal to
// fetch, never a fetch with a weaker configuration.
class Options {
 public:
  explicit Options(CURL* easy) : easy_(easy) {}
  template <class T>
  void Set(CURLoption option, T value) {
    if (rc_ == CURLE_OK) {
      rc_ = curl_easy_setopt(easy_, option, value);
      if (rc_ != CURLE_OK) failed_ = option;
    }
  }
  Status Check() const {
    if (rc_ == CURLE_OK) return Ok();
    return Fail(
        "io", "libcurl refused option " + std::to_string(failed_) + ": " + curl_easy_strerror(rc_));
  }

 private:
  CURL* easy_;
  CURLcode rc_ = CURLE_OK;
  int failed_ = 0;
};

std::string AddressForUrl(const IpAddress& address) {
  return address.is_v6() ? "[" + address.ToString() + "]" : address.ToString();
}

}  // namespace

Fetcher::Fetcher(FetchLimits limits, std::string extra_ca_pem)
    : limits_(limits), extra_ca_pem_(std::move(extra_ca_pem)) {
  GlobalInitOnce();
}

Result<FetchResponse> Fetcher::Fetch(const FetchPlan& plan, const std::vector<HttpHeader>& headers,
                                     std::string_view body, const ConnectPolicy& policy,
                                     const std::atomic<bool>* cancelled) const {
  if (plan.addresses.empty()) return Fail("denied", "no validated address for " + plan.url.host);
  if (plan.method != "POST" && !body.empty()) {
    return Fail("invalid", plan.method + " request cannot carry a body");
  }
  const auto start = Clock::now();
  Error last{"io", "no address could be reached", 0};
  // Each validated address in turn, but only while the previous one could not be connected to:
  // once a connection was made, its answer (or failure) is the answer.
  for (const IpAddress& target : plan.addresses) {
    const auto elapsed =
        std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start);
    if (elapsed >= limits_.total_timeout) return Fail("timeout", "fetch took too long");
    std::unique_ptr<CURL, EasyDeleter> easy(curl_easy_init());
    if (!easy) return Fail("io", "curl_easy_init failed");
    Transfer t;
    t.policy = &policy;
    t.target = target;
    t.port = plan.url.port;
    t.max_body = limits_.max_body_bytes;
    t.max_header = limits_.max_header_bytes;
    t.cancelled = cancelled;

    std::unique_ptr<curl_slist, SlistDeleter> connect_to;
    if (!plan.url.literal) {
      const std::string entry = plan.url.host + ":" + std::to_string(plan.url.port) + ":" +
                                AddressForUrl(target) + ":" + std::to_string(plan.url.port);
      connect_to.reset(curl_slist_append(nullptr, entry.c_str()));
      if (!connect_to) return Fail("io", "out of memory");
    } else if (!(*plan.url.literal == target)) {
      return Fail("denied", "literal host and validated address differ");
    }
    std::unique_ptr<curl_slist, SlistDeleter> header_list;
    auto add_header = [&header_list](const std::string& line) {
      curl_slist* next = curl_slist_append(header_list.get(), line.c_str());
      if (next == nullptr) return false;
      (void)header_list.release();
      header_list.reset(next);
      return true;
    };
    // "Expect:" removes libcurl's own 100-continue for larger POSTs: one round trip, no
    // interim-response handling to get wrong.
    bool ok = add_header("Expect:");
    for (const HttpHeader& h : headers) {
      // "Name;" is libcurl's spelling of an empty value ("Name:" would delete the header).
      ok = ok && add_header(h.value.empty() ? h.name + ";" : h.name + ": " + h.value);
    }
    if (!ok) return Fail("io", "out of memory");

    char error_text[CURL_ERROR_SIZE] = {0};
    const long remaining_ms = static_cast<long>((limits_.total_timeout - elapsed).count());
    Options o(easy.get());
    o.Set(CURLOPT_URL, plan.url.url.c_str());
    o.Set(CURLOPT_PROTOCOLS_STR, "https");
    o.Set(CURLOPT_REDIR_PROTOCOLS_STR, "https");
    o.Set(CURLOPT_FOLLOWLOCATION, 0L);
    o.Set(CURLOPT_MAXREDIRS, 0L);
    o.Set(CURLOPT_PROXY, "");
    o.Set(CURLOPT_NOPROXY, "*");
    o.Set(CURLOPT_NETRC, static_cast<long>(CURL_NETRC_IGNORED));
    // Alt-Svc stays off by not naming it: libcurl's engine exists only once CURLOPT_ALTSVC or
    // CURLOPT_ALTSVC_CTRL is set (and ALTSVC_CTRL 0 is rejected as a bad argument in 7.88).
    o.Set(CURLOPT_HSTS_CTRL, 0L);
    o.Set(CURLOPT_FRESH_CONNECT, 1L);
    o.Set(CURLOPT_FORBID_REUSE, 1L);
    o.Set(CURLOPT_NOSIGNAL, 1L);
    o.Set(CURLOPT_SSL_VERIFYPEER, 1L);
    o.Set(CURLOPT_SSL_VERIFYHOST, 2L);
    o.Set(CURLOPT_SSLVERSION, static_cast<long>(CURL_SSLVERSION_TLSv1_2));
    if (connect_to) o.Set(CURLOPT_CONNECT_TO, connect_to.get());
    o.Set(CURLOPT_OPENSOCKETFUNCTION, OnOpenSocket);
    o.Set(CURLOPT_OPENSOCKETDATA, &t);
    o.Set(CURLOPT_WRITEFUNCTION, OnBody);
    o.Set(CURLOPT_WRITEDATA, &t);
    o.Set(CURLOPT_HEADERFUNCTION, OnHeader);
    o.Set(CURLOPT_HEADERDATA, &t);
    o.Set(CURLOPT_HTTPHEADER, header_list.get());
    o.Set(CURLOPT_ACCEPT_ENCODING, "");  // every encoding libcurl decodes; counted decoded
    if (plan.method != "HEAD") {
      // An early refusal from Content-Length; the write callback is the cap that counts. Not for
      // HEAD: there is no body, and a large Content-Length is a fine answer.
      o.Set(CURLOPT_MAXFILESIZE_LARGE, static_cast<curl_off_t>(limits_.max_body_bytes));
    }
    o.Set(CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(limits_.connect_timeout.count()));
    o.Set(CURLOPT_TIMEOUT_MS, remaining_ms);
    o.Set(CURLOPT_LOW_SPEED_LIMIT, limits_.low_speed_bytes);
    o.Set(CURLOPT_LOW_SPEED_TIME, static_cast<long>(limits_.low_speed_time.count()));
    o.Set(CURLOPT_ERRORBUFFER, error_text);
    o.Set(CURLOPT_NOPROGRESS, 0L);  // the progress callback is where cancellation is seen
    o.Set(CURLOPT_XFERINFOFUNCTION, OnProgress);
    o.Set(CURLOPT_XFERINFODATA, &t);
    if (!extra_ca_pem_.empty()) {
      // Copied by libcurl. The system CA directory (CAPATH) stays in use: "as well", not instead.
      curl_blob blob{const_cast<char*>(extra_ca_pem_.data()), extra_ca_pem_.size(), CURL_BLOB_COPY};
      o.Set(CURLOPT_CAINFO_BLOB, &blob);
    }
    if (plan.method == "HEAD") {
      o.Set(CURLOPT_NOBODY, 1L);
    } else if (plan.method == "POST") {
      o.Set(CURLOPT_POST, 1L);
      o.Set(CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.size()));
      o.Set(CURLOPT_POSTFIELDS, body.data());
    } else if (plan.method == "GET") {
      o.Set(CURLOPT_HTTPGET, 1L);
    } else {
      return Fail("denied", "method not allowed: " + plan.method);
    }
    ANVIL_RETURN_IF_ERROR(o.Check());

    const CURLcode rc = curl_easy_perform(easy.get());
    const std::string detail = error_text[0] ? error_text : curl_easy_strerror(rc);
    if (rc == CURLE_ABORTED_BY_CALLBACK) return Fail("cancelled", "fetch cancelled");
    if (t.refused) {
      return Fail("denied", "connect refused by policy: " + *t.refused);
    }
    if (t.body_over || rc == CURLE_FILESIZE_EXCEEDED) {
      return Fail("limit",
                  "response body over " + std::to_string(limits_.max_body_bytes) + " bytes");
    }
    if (t.headers_over) {
      return Fail("limit",
                  "response headers over " + std::to_string(limits_.max_header_bytes) + " bytes");
    }
    switch (rc) {
      case CURLE_OK: {
        FetchResponse response;
        curl_easy_getinfo(easy.get(), CURLINFO_RESPONSE_CODE, &response.status);
        response.headers = std::move(t.headers);
        response.body = std::move(t.body);
        response.peer = target;
        return response;
      }
      case CURLE_COULDNT_CONNECT:
        last = Error{"io", "cannot connect to " + target.ToString() + ": " + detail, 0};
        continue;  // the next validated address, if any
      case CURLE_OPERATION_TIMEDOUT:
        return Fail("timeout", "fetch of " + plan.url.host + " took too long: " + detail);
      case CURLE_PEER_FAILED_VERIFICATION:
      case CURLE_SSL_CONNECT_ERROR:
      case CURLE_SSL_CERTPROBLEM:
      case CURLE_SSL_CACERT_BADFILE:
        return Fail("io", "TLS with " + plan.url.host + " failed: " + detail);
      case CURLE_UNSUPPORTED_PROTOCOL:
        return Fail("denied", detail);
      default:
        return Fail("io", "fetch of " + plan.url.host + " failed: " + detail);
    }
  }
  return tl::unexpected(last);
}

std::string HeadersToJson(const std::vector<HttpHeader>& headers) {
  nlohmann::json object = nlohmann::json::object();
  for (const HttpHeader& h : headers) {
    auto& slot = object[h.name];
    if (slot.is_string()) {
      slot = slot.get<std::string>() + ", " + h.value;
    } else {
      slot = h.value;
    }
  }
  return object.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace anvil
