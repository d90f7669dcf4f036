// A throw-away certificate authority for the HTTPS tests, made at test time with the `openssl`
// CLI in a private temporary directory: a CA, and leaf certificates for chosen DNS names /
// IP addresses signed by it. Nothing is trusted system-wide; the gateway trusts the CA only
// through --unsafe-test-ca.
#pragma once

#include <memory>
#include <string>
#include <vector>

namespace anvil::testing {

struct TestLeaf {
  std::string cert_path;
  std::string key_path;
};

class TestPki {
 public:
  // nullptr (and an ADD_FAILURE) when openssl is missing or fails.
  static std::unique_ptr<TestPki> Create();
  // One CA (with leaves "api" for api/other/rebind/mixed.anvil.test, example.com (the example
  // plugin) and 127.0.0.2, and "wrong" for wrong.anvil.test) per test process: key generation is
  // the slow part of these tests.
  static TestPki* Shared();
  ~TestPki();

  // subjectAltName entries such as "DNS:api.anvil.test" or "IP:127.0.0.2".
  TestLeaf Issue(const std::string& file_stem, const std::vector<std::string>& alt_names);
  TestLeaf Leaf(const std::string& file_stem) const;  // one issued before
  const std::string& ca_path() const { return ca_cert_; }
  const std::string& dir() const { return dir_; }

 private:
  TestPki() = default;
  std::string dir_, ca_cert_, ca_key_;
};

}  // namespace anvil::testing
