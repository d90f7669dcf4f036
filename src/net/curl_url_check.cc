#include "net/curl_url_check.h"

#include <curl/curl.h>

#include <memory>
#include <string>

#include "common/ascii.h"

namespace anvil {

namespace {

std::string Printable(std::string_view text) { return PrintableAscii(text); }

struct CurlUrlDeleter {
  void operator()(CURLU* handle) const { curl_url_cleanup(handle); }
};
struct CurlStringDeleter {
  void operator()(char* text) const { curl_free(text); }
};

// One part of a parsed URL; the CURLUcode tells absent (CURLUE_NO_*) from present.
CURLUcode GetPart(CURLU* handle, CURLUPart part, unsigned flags, std::string* out) {
  char* raw = nullptr;
  const CURLUcode code = curl_url_get(handle, part, &raw, flags);
  std::unique_ptr<char, CurlStringDeleter> owner(raw);
  if (code == CURLUE_OK && raw != nullptr) *out = raw;
  return code;
}

tl::unexpected<Error> Disagreement(std::string_view what) {
  return Fail("denied", "parser disagreement: " + std::string(what));
}

}  // namespace

Status CrossCheckWithCurl(std::string_view url, const FetchUrl& ours) {
  // curl_url_set takes a C string: with an embedded NUL it would judge a shorter URL.
  if (url.find('\0') != std::string_view::npos) {
    return Disagreement("NUL byte in URL (libcurl would read only the part before it)");
  }
  std::unique_ptr<CURLU, CurlUrlDeleter> handle(curl_url());
  if (!handle) return Fail("net", "curl_url: out of memory");
  const std::string text(url);
  if (const CURLUcode code = curl_url_set(handle.get(), CURLUPART_URL, text.c_str(), 0);
      code != CURLUE_OK) {
    return Disagreement(std::string("libcurl rejects the URL (") + curl_url_strerror(code) + ")");
  }

  std::string value;
  if (GetPart(handle.get(), CURLUPART_SCHEME, 0, &value) != CURLUE_OK ||
      AsciiLower(value) != "https") {
    return Disagreement("libcurl reads scheme '" + Printable(value) + "'");
  }
  // Absent parts must be reported absent (CURLUE_NO_*), not merely empty.
  if (GetPart(handle.get(), CURLUPART_USER, 0, &value) != CURLUE_NO_USER ||
      GetPart(handle.get(), CURLUPART_PASSWORD, 0, &value) != CURLUE_NO_PASSWORD ||
      GetPart(handle.get(), CURLUPART_OPTIONS, 0, &value) != CURLUE_NO_OPTIONS) {
    return Disagreement("libcurl reads userinfo in the URL");
  }
  if (GetPart(handle.get(), CURLUPART_ZONEID, 0, &value) != CURLUE_NO_ZONEID) {
    return Disagreement("libcurl reads an IPv6 zone id");
  }

  value.clear();
  if (GetPart(handle.get(), CURLUPART_HOST, 0, &value) != CURLUE_OK) {
    return Disagreement("libcurl reads no host");
  }
  if (ours.literal) {
    // libcurl re-formats IP literals (e.g. "[0:0::1]" -> "[::1]"): compare addresses, not text.
    std::string_view curl_host = value;
    if (curl_host.size() >= 2 && curl_host.front() == '[' && curl_host.back() == ']') {
      curl_host = curl_host.substr(1, curl_host.size() - 2);
    }
    auto address = ParseIpLiteral(curl_host);
    if (!address || *address != *ours.literal) {
      return Disagreement("libcurl reads host '" + Printable(value) + "', we read '" + ours.host +
                          "'");
    }
  } else if (AsciiLower(value) != ours.host) {
    return Disagreement("libcurl reads host '" + Printable(value) + "', we read '" + ours.host +
                        "'");
  }

  value.clear();
  if (GetPart(handle.get(), CURLUPART_PORT, CURLU_DEFAULT_PORT, &value) != CURLUE_OK ||
      value != std::to_string(ours.port)) {
    return Disagreement("libcurl reads port '" + Printable(value) + "', we read " +
                        std::to_string(ours.port));
  }
  return Ok();
}

Result<FetchUrl> CheckFetchUrl(std::string_view url, const NetGrant& grant,
                               const UnsafeTestOptions& unsafe_test) {
  return CheckFetchUrl(url, grant, unsafe_test, CrossCheckWithCurl);
}

Result<FetchPlan> PlanFetch(std::string_view url, std::string_view method, const NetGrant& grant,
                            Resolver& resolver, const ConnectPolicy& policy) {
  return PlanFetch(url, method, grant, resolver, policy, CrossCheckWithCurl);
}

}  // namespace anvil
