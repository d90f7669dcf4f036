// Manifest signatures (T8): the pure decision, exhaustively. Each attack case also checks that
// the matching honest signature is accepted, so a verifier that refuses everything fails too.
#include "policy/manifest_signature.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>

#include "policy/digest.h"
#include "policy/trusted_keys.h"

namespace anvil {
namespace manifest_signature_test {
namespace {

const std::string kManifest = "id = \"example.x\"\nversion = \"1\"\nruntime = \"lua\"\n";

struct Signer {
  Ed25519KeyPair pair;
  TrustedKey trusted(const std::string& name) const { return {name, pair.public_raw}; }
  std::string Sign(std::string_view manifest_bytes) const {
    auto sig = SignManifest(Sha256Hex(manifest_bytes), pair.private_pem);
    EXPECT_TRUE(sig) << sig.error().ToString();
    return sig ? *sig : std::string();
  }
};

Signer NewSigner() {
  auto pair = GenerateEd25519KeyPair();
  EXPECT_TRUE(pair);
  return Signer{*pair};
}

TEST(ManifestSignature, ValidSignatureByATrustedKeyNamesTheSigner) {
  Signer alice = NewSigner();
  auto check =
      VerifyManifestSignature(Sha256Hex(kManifest), alice.Sign(kManifest), {alice.trusted("alice")},
                              /*require_signed=*/true);
  ASSERT_TRUE(check) << check.error().ToString();
  EXPECT_TRUE(check->signed_by_trusted_key);
  EXPECT_EQ(check->signer, "alice");
}

TEST(ManifestSignature, NoSignatureIsAllowedUnlessRequired) {
  auto check = VerifyManifestSignature(Sha256Hex(kManifest), std::nullopt, {}, false);
  ASSERT_TRUE(check);
  EXPECT_FALSE(check->signed_by_trusted_key);
  auto required = VerifyManifestSignature(Sha256Hex(kManifest), std::nullopt, {}, true);
  ASSERT_FALSE(required);
  EXPECT_EQ(required.error().code, "denied");
  EXPECT_NE(required.error().message.find("anvil-plugin.toml.sig"), std::string::npos);
  EXPECT_NE(required.error().message.find("required"), std::string::npos);
}

TEST(ManifestSignature, TamperedManifestIsRefused) {
  Signer alice = NewSigner();
  const std::string sig = alice.Sign(kManifest);
  // One byte more in the request: the old signature must not carry over.
  const std::string tampered = kManifest + "[permissions]\nfs.read = [\"**\"]\n";
  for (bool required : {false, true}) {
    auto check =
        VerifyManifestSignature(Sha256Hex(tampered), sig, {alice.trusted("alice")}, required);
    ASSERT_FALSE(check);
    EXPECT_EQ(check.error().code, "denied");
    EXPECT_NE(check.error().message.find("does not match anvil-plugin.toml"), std::string::npos)
        << check.error().message;
    EXPECT_NE(check.error().message.find("anvil-plugin.toml.sig"), std::string::npos);
  }
  // A comment-only change is a change too (the bytes are what is signed).
  EXPECT_FALSE(VerifyManifestSignature(Sha256Hex(kManifest + "# x\n"), sig,
                                       {alice.trusted("alice")}, false));
  EXPECT_TRUE(VerifyManifestSignature(Sha256Hex(kManifest), sig, {alice.trusted("alice")}, false));
}

TEST(ManifestSignature, TamperedSignatureIsRefused) {
  Signer alice = NewSigner();
  auto parsed = ParseSignatureFile(alice.Sign(kManifest));
  ASSERT_TRUE(parsed);
  for (size_t i = 0; i < kEd25519SignatureBytes; i += 7) {
    ManifestSignature flipped = *parsed;
    flipped.signature[i] = static_cast<char>(flipped.signature[i] ^ 0x01);
    auto check = VerifyManifestSignature(Sha256Hex(kManifest), RenderSignatureFile(flipped),
                                         {alice.trusted("alice")}, false);
    ASSERT_FALSE(check) << "bit flip in byte " << i << " accepted";
    EXPECT_EQ(check.error().code, "denied");
  }
  EXPECT_TRUE(VerifyManifestSignature(Sha256Hex(kManifest), RenderSignatureFile(*parsed),
                                      {alice.trusted("alice")}, false));
}

TEST(ManifestSignature, SignatureByAnUntrustedKeyIsRefusedNamingTheKey) {
  Signer alice = NewSigner(), mallory = NewSigner();
  const std::string sig = mallory.Sign(kManifest);
  auto check = VerifyManifestSignature(Sha256Hex(kManifest), sig, {alice.trusted("alice")}, false);
  ASSERT_FALSE(check);
  EXPECT_EQ(check.error().code, "denied");
  EXPECT_NE(check.error().message.find("a key you do not trust"), std::string::npos);
  EXPECT_NE(check.error().message.find(KeyId(mallory.pair.public_raw).substr(0, 16)),
            std::string::npos);
  // No trusted keys at all: the same refusal, not "unsigned".
  EXPECT_FALSE(VerifyManifestSignature(Sha256Hex(kManifest), sig, {}, false));
  EXPECT_TRUE(VerifyManifestSignature(Sha256Hex(kManifest), alice.Sign(kManifest),
                                      {alice.trusted("alice")}, false));
}

TEST(ManifestSignature, ForgedKeyIdOfATrustedKeyDoesNotHelp) {
  // Mallory signs with her key but writes Alice's key id: the id only picks the key to try.
  Signer alice = NewSigner(), mallory = NewSigner();
  auto parsed = ParseSignatureFile(mallory.Sign(kManifest));
  ASSERT_TRUE(parsed);
  parsed->key_id = KeyId(alice.pair.public_raw);
  auto check = VerifyManifestSignature(Sha256Hex(kManifest), RenderSignatureFile(*parsed),
                                       {alice.trusted("alice")}, false);
  ASSERT_FALSE(check);
  EXPECT_EQ(check.error().code, "denied");
  EXPECT_NE(check.error().message.find("does not match"), std::string::npos);
}

TEST(ManifestSignature, SignatureOverAnotherDomainOrMessageDoesNotVerify) {
  // A raw signature over the bare hash (no domain string) is not an Anvil signature.
  Signer alice = NewSigner();
  auto parsed = ParseSignatureFile(alice.Sign(kManifest));
  ASSERT_TRUE(parsed);
  EXPECT_TRUE(
      Ed25519Verify(alice.pair.public_raw, SignedMessage(Sha256Hex(kManifest)), parsed->signature));
  EXPECT_FALSE(Ed25519Verify(alice.pair.public_raw, Sha256Hex(kManifest), parsed->signature));
  EXPECT_FALSE(Ed25519Verify(alice.pair.public_raw, kManifest, parsed->signature));
  EXPECT_FALSE(Ed25519Verify(alice.pair.public_raw.substr(1), SignedMessage(Sha256Hex(kManifest)),
                             parsed->signature));
}

TEST(ManifestSignature, TruncatedOrGarbageSignatureFilesAreInvalid) {
  Signer alice = NewSigner();
  const std::string good = alice.Sign(kManifest);
  const std::string id = KeyId(alice.pair.public_raw);
  const std::string b64 = good.substr(good.rfind(' ') + 1, 88);
  const std::vector<std::string> bad = {
      "",
      "\n",
      good.substr(0, good.size() - 10),                  // truncated base64
      good.substr(0, good.size() / 2),                   // cut in the middle
      "ed25519 " + id + " " + b64.substr(0, 84) + "\n",  // 60 bytes, valid base64
      "ed25519 " + id + " " + b64 + "AAAA\n",            // 67 bytes
      "rsa " + id + " " + b64 + "\n",
      "ed25519  " + id + " " + b64 + "\n",
      "ed25519 " + id + " " + b64 + " \n",
      "ed25519 " + id + " " + b64 + "\n\n",
      "ed25519 " + id.substr(1) + " " + b64 + "\n",
      "ed25519 " + std::string(64, 'G') + " " + b64 + "\n",
      "ed25519 " + id + " " + std::string(88, '*') + "\n",
      "ed25519 " + id + " " + b64.substr(0, 86) + "=A\n",   // padding in the middle
      "ed25519 " + id + " " + b64.substr(0, 85) + "B==\n",  // non-canonical final bits
      std::string(2000, 'A'),
      std::string("\x00\xff\x01garbage", 11),
  };
  for (const std::string& text : bad) {
    auto check =
        VerifyManifestSignature(Sha256Hex(kManifest), text, {alice.trusted("alice")}, false);
    ASSERT_FALSE(check) << "accepted: " << text;
    EXPECT_TRUE(check.error().code == "invalid" || check.error().code == "denied")
        << check.error().ToString();
    EXPECT_NE(check.error().message.find("anvil-plugin.toml.sig"), std::string::npos);
  }
  EXPECT_TRUE(VerifyManifestSignature(Sha256Hex(kManifest), good, {alice.trusted("alice")}, false));
  // Without the final newline is fine too.
  EXPECT_TRUE(VerifyManifestSignature(Sha256Hex(kManifest), good.substr(0, good.size() - 1),
                                      {alice.trusted("alice")}, false));
}

TEST(ManifestSignature, Base64IsStrictAndRoundTrips) {
  for (size_t n = 0; n < 70; ++n) {
    std::string bytes;
    for (size_t i = 0; i < n; ++i) bytes += static_cast<char>(i * 37 + n);
    auto back = DecodeBase64(EncodeBase64(bytes));
    ASSERT_TRUE(back) << n;
    EXPECT_EQ(*back, bytes);
  }
  EXPECT_FALSE(DecodeBase64("QQ"));    // unpadded
  EXPECT_FALSE(DecodeBase64("QR=="));  // non-canonical
  EXPECT_FALSE(DecodeBase64("Q==="));
  EXPECT_FALSE(DecodeBase64("QQ==QQ=="));
  EXPECT_FALSE(DecodeBase64("QQ\n=="));
  EXPECT_EQ(*DecodeBase64("QQ=="), "A");
}

TEST(ManifestSignature, PublicKeysParseFromPemOrHexAndOnlyEd25519) {
  Signer alice = NewSigner();
  auto from_pem = ParsePublicKey(PublicKeyPem(alice.pair.public_raw));
  ASSERT_TRUE(from_pem) << from_pem.error().ToString();
  EXPECT_EQ(*from_pem, alice.pair.public_raw);
  std::string hex = KeyId("");  // any 64 hex
  auto from_hex = ParsePublicKey(hex + "\n");
  ASSERT_TRUE(from_hex);
  EXPECT_EQ(from_hex->size(), 32u);
  EXPECT_FALSE(ParsePublicKey("hello"));
  EXPECT_FALSE(ParsePublicKey(alice.pair.private_pem.substr(0, 20)));
  // A private key is not accepted where a public key is expected.
  EXPECT_FALSE(ParsePublicKey(alice.pair.private_pem));
}

std::string HexToBytes(std::string_view hex) {
  std::string out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) {
    out += static_cast<char>(std::stoi(std::string(hex.substr(i, 2)), nullptr, 16));
  }
  return out;
}

TEST(ManifestSignature, Rfc8032TestVectorsVerify) {
  // RFC 8032 section 7.1, TEST 1 (empty message) and TEST 2 (one byte).
  const std::string pk1 =
      HexToBytes("d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a");
  const std::string sig1 = HexToBytes(
      "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e3970"
      "1cf9b46bd25bf5f0595bbe24655141438e7a100b");
  EXPECT_TRUE(Ed25519Verify(pk1, "", sig1));
  EXPECT_FALSE(Ed25519Verify(pk1, "x", sig1));
  const std::string pk2 =
      HexToBytes("3d4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c");
  const std::string sig2 = HexToBytes(
      "92a009a9f0d4cab8720e820b5f642540a2b27b5416503f8fb3762223ebdb69da085ac1e43e15996e458f3613"
      "d0f11d8c387b2eaeb4302aeeb00d291612bb0c00");
  EXPECT_TRUE(Ed25519Verify(pk2, std::string(1, '\x72'), sig2));
  // A signature whose S is not reduced (S + L) is refused: one message, one signature per key.
  std::string malleable = sig1;
  const unsigned char kL[32] = {0xed, 0xd3, 0xf5, 0x5c, 0x1a, 0x63, 0x12, 0x58, 0xd6, 0x9c, 0xf7,
                                0xa2, 0xde, 0xf9, 0xde, 0x14, 0,    0,    0,    0,    0,    0,
                                0,    0,    0,    0,    0,    0,    0,    0,    0,    0x10};
  unsigned carry = 0;
  for (int i = 0; i < 32; ++i) {
    unsigned v = static_cast<unsigned char>(malleable[32 + i]) + kL[i] + carry;
    malleable[32 + i] = static_cast<char>(v & 0xff);
    carry = v >> 8;
  }
  EXPECT_FALSE(Ed25519Verify(pk1, "", malleable));
}

// Runs a shell command, returns its stdout ("" and a test failure when it fails).
std::string Shell(const std::string& command) {
  std::string out;
  FILE* p = popen(command.c_str(), "r");
  if (!p) return out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  EXPECT_EQ(pclose(p), 0) << command;
  return out;
}

TEST(ManifestSignature, KeysAndSignaturesInteroperateWithOpenSsl) {
  char dir[] = "/tmp/anvil-sig-interop.XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string d = dir;
  // A key made by OpenSSL signs in Anvil, and OpenSSL verifies Anvil's signature.
  Shell("openssl genpkey -algorithm ed25519 -out " + d + "/k.pem 2>&1");
  std::ifstream in(d + "/k.pem");
  std::string pem((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string openssl_pub = Shell("openssl pkey -in " + d + "/k.pem -pubout");
  auto raw = ParsePublicKey(openssl_pub);
  ASSERT_TRUE(raw) << raw.error().ToString();
  EXPECT_EQ(PublicKeyPem(*raw), openssl_pub);  // byte for byte what OpenSSL writes
  auto sig_file = SignManifest(Sha256Hex(kManifest), pem);
  ASSERT_TRUE(sig_file) << sig_file.error().ToString();
  auto parsed = ParseSignatureFile(*sig_file);
  ASSERT_TRUE(parsed);
  EXPECT_TRUE(VerifyManifestSignature(Sha256Hex(kManifest), *sig_file, {{"ossl", *raw}}, true));
  {
    std::ofstream(d + "/msg", std::ios::binary) << SignedMessage(Sha256Hex(kManifest));
    std::ofstream(d + "/sig", std::ios::binary) << parsed->signature;
    std::ofstream(d + "/pub.pem") << openssl_pub;
  }
  EXPECT_NE(Shell("openssl pkeyutl -verify -pubin -inkey " + d + "/pub.pem -rawin -in " + d +
                  "/msg -sigfile " + d + "/sig 2>&1")
                .find("Signature Verified Successfully"),
            std::string::npos);
  // A key made by Anvil is read by OpenSSL, which derives the same public key.
  auto pair = GenerateEd25519KeyPair();
  ASSERT_TRUE(pair);
  std::ofstream(d + "/a.pem") << pair->private_pem;
  EXPECT_EQ(Shell("openssl pkey -in " + d + "/a.pem -pubout"), PublicKeyPem(pair->public_raw));
  // Keys of another type are refused by name, not mistaken for Ed25519.
  Shell("openssl genpkey -algorithm x25519 -out " + d + "/x.pem 2>&1");
  std::ifstream xin(d + "/x.pem");
  std::string x_pem((std::istreambuf_iterator<char>(xin)), std::istreambuf_iterator<char>());
  auto x_sign = SignManifest(Sha256Hex(kManifest), x_pem);
  ASSERT_FALSE(x_sign);
  EXPECT_NE(x_sign.error().message.find("not an Ed25519 key"), std::string::npos);
  auto x_pub = ParsePublicKey(Shell("openssl pkey -in " + d + "/x.pem -pubout"));
  ASSERT_FALSE(x_pub);
  EXPECT_NE(x_pub.error().message.find("not an Ed25519 key"), std::string::npos);
  // Explanatory text before the block is allowed, a header inside it is not.
  EXPECT_TRUE(ParsePublicKey("my release key\n" + openssl_pub));
  std::string with_header = openssl_pub;
  with_header.insert(with_header.find('\n') + 1, "Proc-Type: 4,ENCRYPTED\n");
  EXPECT_FALSE(ParsePublicKey(with_header));
  Shell("rm -rf " + d);
}

TEST(ManifestSignature, KeyNamesAreFileNamesWithoutTricks) {
  EXPECT_TRUE(ValidateKeyName("alice"));
  EXPECT_TRUE(ValidateKeyName("acme-release.2026"));
  for (const char* bad : {"", "../x", "a/b", ".hidden", "-rf", "Alice", "a b", "x\n"}) {
    EXPECT_FALSE(ValidateKeyName(bad)) << bad;
  }
}

// ---- trusted_keys.h: thin I/O, against a real directory ----

class TrustedKeysDirTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/anvil-keys-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    root_ = tmpl;
    dir_ = root_ + "/trusted-keys";
  }
  void TearDown() override {
    if (std::system(("rm -rf " + root_).c_str()) != 0) ADD_FAILURE() << "cannot remove " << root_;
  }
  std::string root_, dir_;
};

TEST_F(TrustedKeysDirTest, TrustListAndUntrust) {
  auto none = LoadTrustedKeys(dir_);
  ASSERT_TRUE(none);
  EXPECT_TRUE(none->empty());
  Signer alice = NewSigner(), bob = NewSigner();
  ASSERT_TRUE(TrustKey("bob", bob.pair.public_raw, dir_));
  ASSERT_TRUE(TrustKey("alice", alice.pair.public_raw, dir_));
  struct stat st {};
  ASSERT_EQ(::stat(dir_.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  ASSERT_EQ(::stat((dir_ + "/alice.pub").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  auto keys = LoadTrustedKeys(dir_);
  ASSERT_TRUE(keys) << keys.error().ToString();
  ASSERT_EQ(keys->size(), 2u);
  EXPECT_EQ((*keys)[0].name, "alice");
  EXPECT_EQ((*keys)[0].public_key, alice.pair.public_raw);
  ASSERT_TRUE(UntrustKey("alice", dir_));
  EXPECT_EQ(UntrustKey("alice", dir_).error().code, "not_found");
  EXPECT_EQ(LoadTrustedKeys(dir_)->size(), 1u);
  EXPECT_FALSE(TrustKey("../evil", alice.pair.public_raw, dir_));
}

TEST_F(TrustedKeysDirTest, KeyFilesOthersCanWriteOrSymlinksAreRefusedNotSkipped) {
  Signer alice = NewSigner();
  ASSERT_TRUE(TrustKey("alice", alice.pair.public_raw, dir_));
  ASSERT_EQ(::chmod((dir_ + "/alice.pub").c_str(), 0666), 0);
  auto loaded = LoadTrustedKeys(dir_);
  ASSERT_FALSE(loaded);
  EXPECT_EQ(loaded.error().code, "denied");
  EXPECT_NE(loaded.error().message.find("alice.pub"), std::string::npos);
  ASSERT_EQ(::chmod((dir_ + "/alice.pub").c_str(), 0600), 0);
  EXPECT_TRUE(LoadTrustedKeys(dir_));

  std::ofstream(root_ + "/planted.pem") << PublicKeyPem(NewSigner().pair.public_raw);
  ASSERT_EQ(::symlink((root_ + "/planted.pem").c_str(), (dir_ + "/planted.pub").c_str()), 0);
  auto with_link = LoadTrustedKeys(dir_);
  ASSERT_FALSE(with_link);
  EXPECT_EQ(with_link.error().code, "denied");
  ASSERT_EQ(::unlink((dir_ + "/planted.pub").c_str()), 0);

  ASSERT_EQ(::chmod(dir_.c_str(), 0777), 0);
  EXPECT_FALSE(LoadTrustedKeys(dir_));
  ASSERT_EQ(::chmod(dir_.c_str(), 0700), 0);
  EXPECT_TRUE(LoadTrustedKeys(dir_));
}

TEST_F(TrustedKeysDirTest, SignatureFileIsReadWithoutFollowingSymlinks) {
  const std::string plugin = root_ + "/plugin";
  ASSERT_EQ(::mkdir(plugin.c_str(), 0700), 0);
  auto absent = ReadSignatureFile(plugin);
  ASSERT_TRUE(absent);
  EXPECT_FALSE(absent->has_value());
  std::ofstream(root_ + "/elsewhere.sig") << "x";
  ASSERT_EQ(
      ::symlink((root_ + "/elsewhere.sig").c_str(), (plugin + "/anvil-plugin.toml.sig").c_str()),
      0);
  auto link = ReadSignatureFile(plugin);
  ASSERT_FALSE(link);
  EXPECT_EQ(link.error().code, "denied");
  ASSERT_EQ(::unlink((plugin + "/anvil-plugin.toml.sig").c_str()), 0);
  std::ofstream(plugin + "/anvil-plugin.toml.sig") << "ed25519 x y\n";
  auto present = ReadSignatureFile(plugin);
  ASSERT_TRUE(present);
  EXPECT_EQ(**present, "ed25519 x y\n");
}

}  // namespace
}  // namespace manifest_signature_test
}  // namespace anvil
