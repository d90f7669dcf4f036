#include "test_pki.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

namespace anvil::testing {

namespace {

bool Run(const std::string& command) {
  const std::string quiet = command + " >/dev/null 2>&1";
  return std::system(quiet.c_str()) == 0;
}

}  // namespace

std::unique_ptr<TestPki> TestPki::Create() {
  std::unique_ptr<TestPki> pki(new TestPki());
  char dir[] = "/tmp/anvil-pki.XXXXXX";
  if (mkdtemp(dir) == nullptr) {
    ADD_FAILURE() << "mkdtemp";
    return nullptr;
  }
  pki->dir_ = dir;
  pki->ca_cert_ = pki->dir_ + "/ca.pem";
  pki->ca_key_ = pki->dir_ + "/ca.key";
  if (!Run("openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2"
           " -subj '/CN=Anvil Test CA' -keyout " +
           pki->ca_key_ + " -out " + pki->ca_cert_ +
           " -addext basicConstraints=critical,CA:TRUE"
           " -addext keyUsage=critical,keyCertSign,cRLSign")) {
    ADD_FAILURE() << "openssl could not make the test CA (is the openssl CLI installed?)";
    return nullptr;
  }
  return pki;
}

TestPki* TestPki::Shared() {
  static std::unique_ptr<TestPki> shared = [] {
    auto pki = Create();
    if (pki) {
      pki->Issue("api", {"DNS:api.anvil.test", "DNS:other.anvil.test", "DNS:rebind.anvil.test",
                         "DNS:mixed.anvil.test", "DNS:example.com", "IP:127.0.0.2"});
      pki->Issue("wrong", {"DNS:wrong.anvil.test"});
    }
    return pki;
  }();
  return shared.get();
}

TestLeaf TestPki::Leaf(const std::string& stem) const {
  return {dir_ + "/" + stem + ".pem", dir_ + "/" + stem + ".key"};
}

TestPki::~TestPki() {
  std::error_code ignored;
  if (!dir_.empty()) std::filesystem::remove_all(dir_, ignored);
}

TestLeaf TestPki::Issue(const std::string& stem, const std::vector<std::string>& alt_names) {
  TestLeaf leaf{dir_ + "/" + stem + ".pem", dir_ + "/" + stem + ".key"};
  const std::string csr = dir_ + "/" + stem + ".csr";
  const std::string ext = dir_ + "/" + stem + ".ext";
  {
    std::ofstream out(ext);
    out << "basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\n"
           "extendedKeyUsage=serverAuth\nsubjectAltName=";
    for (size_t i = 0; i < alt_names.size(); ++i) out << (i ? "," : "") << alt_names[i];
    out << "\n";
  }
  const bool ok =
      Run("openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj '/CN=" + stem +
          "' -keyout " + leaf.key_path + " -out " + csr) &&
      Run("openssl x509 -req -days 2 -in " + csr + " -CA " + ca_cert_ + " -CAkey " + ca_key_ +
          " -CAcreateserial -extfile " + ext + " -out " + leaf.cert_path);
  if (!ok) ADD_FAILURE() << "openssl could not issue the test certificate " << stem;
  return leaf;
}

}  // namespace anvil::testing
