// server/client/tls_client_context.cc: see tls_client_context.h.
#include "server/client/tls_client_context.h"

#include <arpa/inet.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>
#include <openssl/x509v3.h>

#include <array>
#include <vector>

namespace numadir::server {
namespace {

bool is_ip_address(const std::string& host) {
  unsigned char address[sizeof(in6_addr)];
  return inet_pton(AF_INET, host.c_str(), address) == 1 ||
         inet_pton(AF_INET6, host.c_str(), address) == 1;
}

// Returns: OpenSSL's queued error codes, oldest first, and clears them.
std::vector<unsigned long> take_error_codes() {
  std::vector<unsigned long> codes;
  while (const unsigned long code = ERR_get_error()) {
    codes.push_back(code);
  }
  return codes;
}

// Returns: the reasons of `codes`, "; "-separated, each once; `fallback` when there are none.
std::string describe_error_codes(const std::vector<unsigned long>& codes,
                                 std::string_view fallback) {
  std::string out;
  for (const unsigned long code : codes) {
    // The reason alone ("certificate verify failed"), not the library and function codes: the
    // text is for an admin.
    const char* reason = ERR_reason_error_string(code);
    std::array<char, 256> text{};
    if (reason == nullptr) {
      ERR_error_string_n(code, text.data(), text.size());
      reason = text.data();
    }
    if (out.find(reason) != std::string::npos) {
      continue;  // OpenSSL often queues the same reason from several layers.
    }
    out += out.empty() ? "" : "; ";
    out += reason;
  }
  return out.empty() ? std::string(fallback) : out;
}

}  // namespace

std::string take_openssl_errors(std::string_view fallback) {
  return describe_error_codes(take_error_codes(), fallback);
}

std::string describe_handshake_failure(SSL* ssl, std::string_view fallback) {
  const long verify = SSL_get_verify_result(ssl);
  if ((SSL_get_verify_mode(ssl) & SSL_VERIFY_PEER) != 0 && verify != X509_V_OK) {
    ERR_clear_error();
    return std::string("certificate verify failed: ") + X509_verify_cert_error_string(verify);
  }
  return "TLS handshake failed: " + take_openssl_errors(fallback);
}

Result<std::unique_ptr<TlsClientContext>> TlsClientContext::create(
    const TlsClientSettings& settings) {
  if (settings.certificate.empty() != settings.key.empty()) {
    return invalid_argument("certificate and key go together");
  }
  ERR_clear_error();
  SSL_CTX* ctx = SSL_CTX_new(TLS_client_method());
  if (ctx == nullptr) {
    return internal_error("SSL_CTX_new: " + take_openssl_errors("out of memory"));
  }
  std::unique_ptr<SSL_CTX, void (*)(SSL_CTX*)> owned(ctx, SSL_CTX_free);
  SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
  SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_COMPRESSION |
                               // A peer that closes without close_notify reads as a close, not
                               // as an error: slapd does so after a Notice of Disconnection.
                               SSL_OP_IGNORE_UNEXPECTED_EOF);
  // Partial writes: the connection keeps its own offset, as with send().
  SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER |
                            SSL_MODE_AUTO_RETRY);
  if (settings.verify) {
    const int loaded = settings.ca_file.empty()
                           ? SSL_CTX_set_default_verify_paths(ctx)
                           : SSL_CTX_load_verify_locations(ctx, settings.ca_file.c_str(), nullptr);
    if (loaded != 1) {
      return invalid_argument("ca_file " +
                              (settings.ca_file.empty() ? std::string("(the system store)")
                                                        : settings.ca_file.string()) +
                              ": " + take_openssl_errors("cannot be loaded"));
    }
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nullptr);
  } else {
    SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, nullptr);
  }
  if (!settings.certificate.empty()) {
    if (SSL_CTX_use_certificate_chain_file(ctx, settings.certificate.c_str()) != 1) {
      return invalid_argument("certificate " + settings.certificate.string() + ": " +
                              take_openssl_errors("cannot be loaded"));
    }
    // With the certificate set, loading a key checks that it matches: X509's "key values
    // mismatch" is that, not a key that does not load.
    if (SSL_CTX_use_PrivateKey_file(ctx, settings.key.c_str(), SSL_FILETYPE_PEM) != 1) {
      const std::vector<unsigned long> errors = take_error_codes();
      bool mismatch = false;
      for (const unsigned long error : errors) {
        mismatch = mismatch || (ERR_GET_LIB(error) == ERR_LIB_X509 &&
                                ERR_GET_REASON(error) == X509_R_KEY_VALUES_MISMATCH);
      }
      if (!mismatch) {
        return invalid_argument("key " + settings.key.string() + ": " +
                                describe_error_codes(errors, "cannot be loaded"));
      }
      return invalid_argument("key " + settings.key.string() + " does not match certificate " +
                              settings.certificate.string());
    }
    if (SSL_CTX_check_private_key(ctx) != 1) {
      ERR_clear_error();
      return invalid_argument("key " + settings.key.string() + " does not match certificate " +
                              settings.certificate.string());
    }
  }
  SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
  return std::unique_ptr<TlsClientContext>(new TlsClientContext(settings, owned.release()));
}

TlsClientContext::~TlsClientContext() { SSL_CTX_free(ctx_); }

Result<SSL*> TlsClientContext::new_ssl(int fd, const std::string& host) const {
  ERR_clear_error();
  SSL* ssl = SSL_new(ctx_);
  if (ssl == nullptr) {
    return internal_error("SSL_new: " + take_openssl_errors("out of memory"));
  }
  const bool ip = is_ip_address(host);
  bool ok = SSL_set_fd(ssl, fd) == 1;
  if (ok && !ip && !host.empty()) {
    ok = SSL_set_tlsext_host_name(ssl, host.c_str()) == 1;
  }
  if (ok && settings_.verify) {
    // The certificate must name the host of the URL: a DNS name (SAN, or the subject's CN when
    // it has no DNS SAN) or an IP address SAN.
    X509_VERIFY_PARAM* param = SSL_get0_param(ssl);
    X509_VERIFY_PARAM_set_hostflags(param, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
    ok = ip ? X509_VERIFY_PARAM_set1_ip_asc(param, host.c_str()) == 1
            : SSL_set1_host(ssl, host.c_str()) == 1;
  }
  if (!ok) {
    SSL_free(ssl);
    return internal_error("cannot check the server certificate against \"" + host +
                          "\": " + take_openssl_errors("refused by OpenSSL"));
  }
  SSL_set_connect_state(ssl);
  return ssl;
}

}  // namespace numadir::server
