#include "tls_hello.h"

#include <openssl/bio.h>
#include <openssl/ssl.h>

namespace anvil::testing {

std::string RealClientHello(const std::string& sni) {
  SSL_CTX* ctx = SSL_CTX_new(TLS_client_method());
  SSL* ssl = SSL_new(ctx);
  BIO* in = BIO_new(BIO_s_mem());
  BIO* out = BIO_new(BIO_s_mem());
  SSL_set_bio(ssl, in, out);
  if (!sni.empty()) SSL_set_tlsext_host_name(ssl, sni.c_str());
  SSL_connect(ssl);  // writes the hello into `out`, then wants to read
  char* data = nullptr;
  long n = BIO_get_mem_data(out, &data);
  std::string hello(data, static_cast<size_t>(n));
  SSL_free(ssl);
  SSL_CTX_free(ctx);
  return hello;
}

}  // namespace anvil::testing
