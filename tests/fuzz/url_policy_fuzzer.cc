// The sys.net.fetch URL policy (src/netpolicy/url_policy, threat model T2). Input:
// "host,host,...\nMETHOD\nURL"; the hosts (when they form a valid allowlist) are added to a fixed
// one. Invariants for an accepted URL: its host is on the allowlist exactly, the canonical URL
// is https on port 443 with no userinfo, whitespace, backslash or non-ASCII byte, re-parsing the
// canonical URL gives the same host and text, and an IP-literal host prints as itself. And the
// one host grammar (netpolicy/host_name.h): every extra host a manifest could grant
// (ValidateGrantHost) is a valid allowlist entry and is exactly the host of "https://HOST/".
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "fuzz_util.h"
#include "net/curl_url_check.h"
#include "netpolicy/host_name.h"
#include "netpolicy/url_policy.h"

using anvil::fuzz::Require;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto parts = anvil::fuzz::Split(anvil::fuzz::AsView(data, size), '\n', 3);
  if (parts.size() != 3) return 0;
  std::vector<std::string> hosts = {"api.example.com", "example.org", "93.184.216.34",
                                    "[2606:2800:220:1:248:1893:25c8:1946]"};
  auto extra = anvil::fuzz::Split(parts[0], ',', 8);
  std::vector<std::string> with_extra = hosts;
  with_extra.insert(with_extra.end(), extra.begin(), extra.end());
  for (const std::string& host : extra) {
    if (!anvil::ValidateGrantHost(host)) continue;
    Require(anvil::HostAllowlist::Create({host}).has_value(), "grantable host not allowlistable",
            host);
    auto as_url = anvil::ParseFetchUrl("https://" + host + "/");
    Require(as_url && as_url->host == host, "grantable host read differently in a URL", host);
  }
  auto allowlist = anvil::HostAllowlist::Create(with_extra);
  if (!allowlist) allowlist = anvil::HostAllowlist::Create(hosts);
  Require(allowlist.has_value(), "fixed allowlist rejected");
  anvil::NetGrant grant{*allowlist, /*post=*/(data[0] & 1) != 0};

  if (anvil::CheckFetchMethod(parts[1], grant)) {
    Require(parts[1] == "GET" || parts[1] == "HEAD" || (grant.post && parts[1] == "POST"), "method",
            parts[1]);
  }

  const std::string& url = parts[2];
  auto parsed = anvil::ParseFetchUrl(url);
  auto checked = anvil::CheckFetchUrl(url, grant, anvil::UnsafeTestOptions{});
  if (!checked) return 0;
  Require(parsed.has_value(), "CheckFetchUrl accepted what ParseFetchUrl refused", url);
  const anvil::FetchUrl& u = *checked;
  Require(grant.hosts.Contains(u.host), "host not on the allowlist", u.host);
  bool listed = false;
  for (const auto& h : grant.hosts.hosts()) listed = listed || h == u.host;
  Require(listed, "Contains() is not an exact match", u.host);
  Require(u.port == 443, "port", url);
  Require(u.url.starts_with("https://" + u.host), "canonical URL does not start with the host",
          u.url);
  for (unsigned char c : u.url) {
    Require(c > 0x20 && c < 0x7f && c != '\\', "byte in the canonical URL", u.url);
  }
  Require(u.url.find('@') == std::string::npos || u.url.find('@') > 8 + u.host.size(), "userinfo",
          u.url);
  Require(u.url.find('#') == std::string::npos, "fragment kept", u.url);
  Require(!u.path_and_query.empty() && u.path_and_query[0] == '/', "path", u.url);
  if (u.literal) {
    std::string text = u.literal->ToString();
    Require(u.host == text || u.host == "[" + text + "]", "literal host", u.host);
  }
  auto again = anvil::ParseFetchUrl(u.url);
  Require(again && again->url == u.url && again->host == u.host, "canonical URL re-parse", u.url);
  return 0;
}
