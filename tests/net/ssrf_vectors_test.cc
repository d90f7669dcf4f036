// Every vector of tests/net/testdata/ssrf-vectors.txt (the repository's copy of the project's
// ../shared/testdata/ssrf-vectors.txt) as its own test case, named after its line number. The
// file is read at test time -- including the grant and the fake DNS fixture written in its header
// comments -- so a vector added there is tested without touching this code. A missing or
// unreadable file is a failure, never a skip. When the shared original sits beside the clone, the
// two must be identical.
//
// Section A: the input is an address (or literal); it goes through ParseIpLiteral and
//   ClassifyAddress, and also, as a cross-check of the plumbing, through ConnectPolicy, through
//   ResolveAndValidate as a resolver answer and through PlanFetch as a granted URL literal.
// Section B: the input is a URL; it goes through PlanFetch (URL policy, method GET, StaticResolver
//   loaded with the fixture, address policy). A denial whose reason starts "granted but" must
//   come from the resolution step; every other denial must happen before any DNS query.
#include <gtest/gtest.h>

#include <cctype>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "net/curl_url_check.h"
#include "netpolicy/address_policy.h"
#include "netpolicy/connect_policy.h"
#include "netpolicy/fetch_plan.h"
#include "netpolicy/ip_address.h"
#include "netpolicy/resolver.h"
#include "netpolicy/url_policy.h"

namespace anvil {
namespace ssrf_vectors_test {
namespace {

constexpr const char kVectorFile[] = ANVIL_SOURCE_DIR "/tests/net/testdata/ssrf-vectors.txt";
// The shared original, when a checkout of it sits beside the repository: the copy must not drift.
constexpr const char kSharedVectorFile[] = ANVIL_SOURCE_DIR "/../shared/testdata/ssrf-vectors.txt";

struct Vector {
  int line = 0;
  std::string input;  // decoded
  bool allow = false;
  std::string reason;
  std::string error;  // set when this line (or the file) could not be understood
};

// Readable test output (gtest would otherwise print the struct's bytes into every test name).
void PrintTo(const Vector& vector, std::ostream* out) {
  *out << "line " << vector.line << " " << testing::PrintToString(vector.input);
}

struct DnsRecord {
  std::string type;   // "A", "AAAA", "CNAME", "NXDOMAIN", "NODATA"
  std::string value;  // address or CNAME target
};

struct VectorFile {
  std::string error;
  std::vector<std::string> grant;
  std::vector<std::pair<std::string, std::vector<DnsRecord>>> dns;
  std::vector<Vector> addresses;  // Section A
  std::vector<Vector> urls;       // Section B
};

void AppendUtf8(unsigned code_point, std::string* out) {
  if (code_point < 0x80) {
    *out += static_cast<char>(code_point);
  } else if (code_point < 0x800) {
    *out += static_cast<char>(0xc0 | (code_point >> 6));
    *out += static_cast<char>(0x80 | (code_point & 0x3f));
  } else {
    *out += static_cast<char>(0xe0 | (code_point >> 12));
    *out += static_cast<char>(0x80 | ((code_point >> 6) & 0x3f));
    *out += static_cast<char>(0x80 | (code_point & 0x3f));
  }
}

// The escapes the file's header defines: \\ \t \r \n \xHH \uHHHH. Anything else is an error, so
// a vector the file's author meant differently fails loudly instead of testing something else.
bool DecodeEscapes(const std::string& text, std::string* out, std::string* error) {
  out->clear();
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '\\') {
      *out += text[i];
      continue;
    }
    if (i + 1 >= text.size()) {
      *error = "dangling backslash";
      return false;
    }
    const char kind = text[++i];
    switch (kind) {
      case '\\':
        *out += '\\';
        break;
      case 't':
        *out += '\t';
        break;
      case 'r':
        *out += '\r';
        break;
      case 'n':
        *out += '\n';
        break;
      case 'x':
      case 'u': {
        const std::size_t digits = kind == 'x' ? 2 : 4;
        if (i + digits >= text.size()) {
          *error = "short \\" + std::string(1, kind) + " escape";
          return false;
        }
        const std::string hex = text.substr(i + 1, digits);
        for (char c : hex) {
          if (!std::isxdigit(static_cast<unsigned char>(c))) {
            *error = "bad \\" + std::string(1, kind) + " escape";
            return false;
          }
        }
        const auto value = static_cast<unsigned>(std::stoul(hex, nullptr, 16));
        if (kind == 'x') {
          *out += static_cast<char>(value);
        } else {
          AppendUtf8(value, out);
        }
        i += digits;
        break;
      }
      default:
        *error = std::string("unknown escape \\") + kind;
        return false;
    }
  }
  return true;
}

std::vector<std::string> Words(const std::string& text) {
  std::istringstream stream(text);
  std::vector<std::string> words;
  for (std::string word; stream >> word;) words.push_back(word);
  return words;
}

std::string Trim(const std::string& text) {
  const auto begin = text.find_first_not_of(" \t");
  if (begin == std::string::npos) return "";
  const auto end = text.find_last_not_of(" \t");
  return text.substr(begin, end - begin + 1);
}

// One fixture line: "name  A 1.2.3.4 ; AAAA ::1", "name CNAME target -> A 10.1.2.3",
// "name NXDOMAIN", "name NOERROR, no A/AAAA".
bool ParseDnsLine(const std::string& body, VectorFile* file) {
  const std::vector<std::string> words = Words(body);
  if (words.size() < 2) return false;
  const std::string& name = words[0];
  std::vector<DnsRecord> records;
  std::string rest = Trim(body.substr(body.find(name) + name.size()));
  if (rest == "NXDOMAIN") {
    records.push_back({"NXDOMAIN", ""});
  } else if (rest.rfind("NOERROR", 0) == 0) {
    records.push_back({"NODATA", ""});
  } else {
    std::stringstream parts(rest);
    for (std::string part; std::getline(parts, part, ';');) {
      std::vector<std::string> tokens = Words(part);
      // "CNAME target -> A addr": the alias, then the target's own record.
      if (tokens.size() == 5 && tokens[0] == "CNAME" && tokens[2] == "->") {
        records.push_back({"CNAME", tokens[1]});
        file->dns.push_back({tokens[1], {{tokens[3], tokens[4]}}});
        if (tokens[3] != "A" && tokens[3] != "AAAA") return false;
        continue;
      }
      if (tokens.size() != 2 || (tokens[0] != "A" && tokens[0] != "AAAA")) return false;
      records.push_back({tokens[0], tokens[1]});
    }
  }
  file->dns.push_back({name, records});
  return true;
}

VectorFile Load() {
  VectorFile file;
  std::ifstream in(kVectorFile);
  if (!in) {
    file.error = std::string("cannot open ") + kVectorFile;
    return file;
  }
  enum class Header { kNone, kGrant, kDns, kDone } header = Header::kNone;
  char section = 0;
  int line_number = 0;
  for (std::string line; std::getline(in, line);) {
    ++line_number;
    if (line.empty()) continue;  // a blank line is not a vector (the file ends with one)
    if (line[0] == '#') {
      const std::string body = line.substr(1);
      if (body.find("---- Section A") != std::string::npos) section = 'A';
      if (body.find("---- Section B") != std::string::npos) section = 'B';
      if (body.find("Assumed grant") != std::string::npos) {
        header = Header::kGrant;
        continue;
      }
      if (body.find("Fake DNS fixture") != std::string::npos) {
        header = Header::kDns;
        continue;
      }
      if (body.find("Sources for vectors") != std::string::npos) header = Header::kDone;
      if (header == Header::kGrant) {
        for (const std::string& host : Words(body)) file.grant.push_back(host);
      } else if (header == Header::kDns && !Trim(body).empty()) {
        if (!ParseDnsLine(body, &file)) {
          file.error = "line " + std::to_string(line_number) + ": unknown DNS fixture form";
          return file;
        }
      }
      continue;
    }
    Vector vector;
    vector.line = line_number;
    std::vector<std::string> fields;
    std::stringstream split(line);
    for (std::string field; std::getline(split, field, '\t');) fields.push_back(field);
    if (fields.size() != 3 || (fields[1] != "allow" && fields[1] != "deny")) {
      vector.error = "not <input> TAB <allow|deny> TAB <reason>";
    } else if (!DecodeEscapes(fields[0], &vector.input, &vector.error)) {
      vector.error = "bad escape: " + vector.error;
    } else {
      vector.allow = fields[1] == "allow";
      vector.reason = fields[2];
    }
    if (section == 'A') {
      file.addresses.push_back(vector);
    } else if (section == 'B') {
      file.urls.push_back(vector);
    } else {
      file.error = "line " + std::to_string(line_number) + ": vector before any section";
      return file;
    }
  }
  if (file.grant.empty()) file.error = "no grant found in the header";
  if (file.dns.empty()) file.error = "no DNS fixture found in the header";
  return file;
}

const VectorFile& File() {
  static const VectorFile file = Load();
  return file;
}

// The parameter lists. When the file cannot be loaded, one placeholder vector carries the error
// so that the suite fails instead of silently having no cases.
std::vector<Vector> WithPlaceholder(std::vector<Vector> vectors) {
  if (!File().error.empty() || vectors.empty()) {
    Vector placeholder;
    placeholder.error = File().error.empty() ? "section has no vectors" : File().error;
    return {placeholder};
  }
  return vectors;
}
std::vector<Vector> AddressVectors() { return WithPlaceholder(File().addresses); }
std::vector<Vector> UrlVectors() { return WithPlaceholder(File().urls); }

std::string VectorName(const testing::TestParamInfo<Vector>& info) {
  return info.param.line == 0 ? "file_not_loaded" : "line_" + std::to_string(info.param.line);
}

NetGrant FixtureGrant() {
  auto hosts = HostAllowlist::Create(File().grant);
  EXPECT_TRUE(hosts) << hosts.error().ToString();
  return NetGrant{hosts ? *hosts : HostAllowlist(), false};
}

StaticResolver FixtureResolver() {
  StaticResolver resolver;
  for (const auto& [name, records] : File().dns) {
    for (const DnsRecord& record : records) {
      if (record.type == "NXDOMAIN") continue;  // unknown names are NXDOMAIN anyway
      if (record.type == "NODATA") {
        resolver.AddNoData(name);
      } else if (record.type == "CNAME") {
        resolver.AddAlias(name, record.value);
      } else {
        auto address = ParseIpLiteral(record.value);
        EXPECT_TRUE(address) << "fixture address " << record.value;
        if (address) resolver.AddAddress(name, *address);
      }
    }
  }
  return resolver;
}

// "10.0.0.0/8 RFC1918" -> "10.0.0.0/8": the range the vector's author says decides, if any.
std::string ClaimedRange(const std::string& reason) {
  const std::vector<std::string> words = Words(reason);
  if (words.empty() || words[0].find('/') == std::string::npos) return "";
  return words[0];
}

std::string Describe(const Vector& vector) {
  return "line " + std::to_string(vector.line) + " '" + vector.input + "' (" +
         (vector.allow ? "allow" : "deny") + ": " + vector.reason + ")";
}

std::optional<std::string> Slurp(const char* path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(SsrfVectorsFile, RepositoryCopyMatchesTheSharedFileWhenPresent) {
  auto shared = Slurp(kSharedVectorFile);
  if (!shared) {
    GTEST_SKIP() << "SKIPPED: " << kSharedVectorFile
                 << " is not beside this clone; only the repository's copy was tested";
  }
  auto copy = Slurp(kVectorFile);
  ASSERT_TRUE(copy) << "cannot open " << kVectorFile;
  EXPECT_EQ(*copy, *shared) << kVectorFile << " differs from " << kSharedVectorFile
                            << "; fix: copy the shared file over the repository's copy";
}

TEST(SsrfVectorsFile, LoadsWithGrantFixtureAndBothSections) {
  const VectorFile& file = File();
  ASSERT_EQ(file.error, "") << kVectorFile;
  EXPECT_FALSE(file.addresses.empty());
  EXPECT_FALSE(file.urls.empty());
  EXPECT_TRUE(HostAllowlist::Create(file.grant)) << "the file's grant must be a valid allowlist";
  for (const Vector& vector : file.addresses) EXPECT_EQ(vector.error, "") << vector.line;
  for (const Vector& vector : file.urls) EXPECT_EQ(vector.error, "") << vector.line;
  std::cout << "ssrf-vectors.txt: " << file.addresses.size() << " address vectors, "
            << file.urls.size() << " URL vectors, " << file.grant.size() << " granted hosts, "
            << file.dns.size() << " fixture names\n";
}

class SsrfAddressVector : public ::testing::TestWithParam<Vector> {};

TEST_P(SsrfAddressVector, Classify) {
  const Vector& vector = GetParam();
  ASSERT_EQ(vector.error, "") << "line " << vector.line;
  auto address = ParseIpLiteral(vector.input);
  if (vector.allow) {
    ASSERT_TRUE(address) << Describe(vector) << ": " << address.error().ToString();
  } else if (!address) {
    // Refused as a literal (zone id, non-canonical form): no address, so nothing to connect to.
    EXPECT_EQ(address.error().code, "invalid") << Describe(vector);
    return;
  }
  const AddressVerdict verdict = ClassifyAddress(*address);
  EXPECT_EQ(verdict.allowed, vector.allow) << Describe(vector) << " -> " << verdict.reason;
  if (!vector.allow) {
    const std::string claimed = ClaimedRange(vector.reason);
    if (!claimed.empty()) {
      EXPECT_NE(verdict.reason.find(claimed), std::string::npos)
          << Describe(vector) << ": our reason '" << verdict.reason << "' does not name "
          << claimed;
    }
  }

  // The same verdict through every consumer of the table.
  EXPECT_EQ(ConnectPolicy({}).Check(*address, kHttpsPort).allowed, vector.allow)
      << Describe(vector);
  StaticResolver resolver;
  resolver.AddAddress("vector.example", *address);
  auto resolved = ResolveAndValidate(resolver, "vector.example", kHttpsPort, ConnectPolicy({}));
  EXPECT_EQ(resolved.has_value(), vector.allow) << Describe(vector);
  if (!resolved) {
    EXPECT_NE(resolved.error().message.find(address->ToString()), std::string::npos)
        << "the refusal must name the bad answer: " << resolved.error().ToString();
  }
  const std::string literal_host =
      address->is_v6() ? "[" + vector.input + "]" : std::string(vector.input);
  auto grant = HostAllowlist::Create({literal_host});
  ASSERT_TRUE(grant) << literal_host << ": " << grant.error().ToString();
  StaticResolver no_dns;
  auto plan = PlanFetch("https://" + literal_host + "/", "GET", NetGrant{*grant, false}, no_dns,
                        ConnectPolicy({}));
  EXPECT_EQ(plan.has_value(), vector.allow)
      << Describe(vector) << (plan ? "" : " -> " + plan.error().ToString());
  EXPECT_EQ(no_dns.queries(), 0);
}

INSTANTIATE_TEST_SUITE_P(File, SsrfAddressVector, testing::ValuesIn(AddressVectors()), VectorName);

class SsrfUrlVector : public ::testing::TestWithParam<Vector> {};

TEST_P(SsrfUrlVector, Policy) {
  const Vector& vector = GetParam();
  ASSERT_EQ(vector.error, "") << "line " << vector.line;
  const NetGrant grant = FixtureGrant();
  StaticResolver resolver = FixtureResolver();
  auto plan = PlanFetch(vector.input, "GET", grant, resolver, ConnectPolicy({}));
  if (vector.allow) {
    ASSERT_TRUE(plan) << Describe(vector) << " -> " << plan.error().ToString();
    ASSERT_FALSE(plan->addresses.empty());
    for (const IpAddress& address : plan->addresses) {
      EXPECT_TRUE(ClassifyAddress(address).allowed) << address.ToString();
    }
    EXPECT_TRUE(grant.hosts.Contains(plan->url.host));
    return;
  }
  ASSERT_FALSE(plan) << Describe(vector) << " was allowed: " << plan->url.url;
  const std::string& code = plan.error().code;
  EXPECT_TRUE(code == "denied" || code == "invalid" || code == "not_found")
      << plan.error().ToString();
  if (vector.reason.rfind("granted but", 0) == 0) {
    // The URL itself is fine; the answers are not. The refusal must come from resolution.
    auto url = CheckFetchUrl(vector.input, grant, {});
    EXPECT_TRUE(url) << Describe(vector) << ": URL stage refused it: " << url.error().ToString();
    EXPECT_GT(resolver.queries(), 0) << Describe(vector);
  } else {
    // Refused on the URL alone: not even a DNS query may leak.
    EXPECT_EQ(resolver.queries(), 0) << Describe(vector) << " -> " << plan.error().ToString();
    EXPECT_FALSE(CheckFetchUrl(vector.input, grant, {})) << Describe(vector);
  }
}

INSTANTIATE_TEST_SUITE_P(File, SsrfUrlVector, testing::ValuesIn(UrlVectors()), VectorName);

}  // namespace
}  // namespace ssrf_vectors_test
}  // namespace anvil
