// listener/tls.cc: see tls.h.
#include "listener/tls.h"

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>

#include <array>

namespace numadir::listener {

namespace {

// Returns: OpenSSL's queued errors as text (and clears them), or `fallback` when none.
std::string openssl_errors(std::string_view fallback) {
  std::string out;
  while (const unsigned long code = ERR_get_error()) {
    std::array<char, 256> text{};
    ERR_error_string_n(code, text.data(), text.size());
    if (!out.empty()) {
      out += "; ";
    }
    out += text.data();
  }
  return out.empty() ? std::string(fallback) : out;
}

// The defaults when tls.ciphersuites / tls.ciphers are not set: OpenSSL's own sets, with
// AES-128-GCM and SHA-256 first. OpenSSL prefers AES-256-GCM with SHA-384, whose key schedule
// and transcript hashes run on SHA-512 (which x86's SHA extensions do not cover) and whose
// cipher has 14 rounds to 10: a resumed handshake cost 9-12% more server CPU with it (perf/
// RESULTS.md, "TLS: cipher order and tickets"). AES-128-GCM is what TLS 1.3 requires every
// implementation to support (RFC 8446 section 9.1).
constexpr char kDefaultCiphersuites[] =
    "TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256";
// Naming two suites before DEFAULT moves them to the front; DEFAULT adds the rest in its order.
constexpr char kDefaultCiphers[] =
    "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:DEFAULT";

// `allow`: ask for a certificate, let the handshake through whatever the verification says;
// SSL_get_verify_result still tells whether it verified.
int accept_any_certificate(int /*preverified*/, X509_STORE_CTX* /*store*/) { return 1; }

Result<SSL_CTX*> build_context(const TlsSettings& settings) {
  ERR_clear_error();
  SSL_CTX* ctx = SSL_CTX_new(TLS_server_method());
  if (ctx == nullptr) {
    return invalid_argument("tls: " + openssl_errors("cannot create an SSL context"));
  }
  const auto fail = [ctx](const std::string& what) -> Result<SSL_CTX*> {
    const std::string reason = openssl_errors("failed");
    SSL_CTX_free(ctx);
    return invalid_argument(what + ": " + reason);
  };
  SSL_CTX_set_min_proto_version(ctx, settings.tls13_only ? TLS1_3_VERSION : TLS1_2_VERSION);
  SSL_CTX_set_options(
      ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE | SSL_OP_NO_COMPRESSION);
  // The memory BIO grows as needed: a write always completes whole.
  SSL_CTX_set_mode(ctx, SSL_MODE_RELEASE_BUFFERS);
  const char* ciphers = settings.ciphers.empty() ? kDefaultCiphers : settings.ciphers.c_str();
  if (SSL_CTX_set_cipher_list(ctx, ciphers) != 1) {
    return fail("tls.ciphers \"" + settings.ciphers + "\"");
  }
  const char* suites =
      settings.ciphersuites.empty() ? kDefaultCiphersuites : settings.ciphersuites.c_str();
  if (SSL_CTX_set_ciphersuites(ctx, suites) != 1) {
    return fail("tls.ciphersuites \"" + settings.ciphersuites + "\"");
  }
  if (SSL_CTX_use_certificate_chain_file(ctx, settings.certificate.c_str()) != 1) {
    return fail("tls.certificate " + settings.certificate.string());
  }
  if (SSL_CTX_use_PrivateKey_file(ctx, settings.key.c_str(), SSL_FILETYPE_PEM) != 1) {
    return fail("tls.key " + settings.key.string());
  }
  if (SSL_CTX_check_private_key(ctx) != 1) {
    return fail("tls.key " + settings.key.string() + " does not match tls.certificate");
  }
  const bool has_cas = !settings.ca_file.empty() || !settings.ca_dir.empty();
  if (has_cas && SSL_CTX_load_verify_locations(
                     ctx, settings.ca_file.empty() ? nullptr : settings.ca_file.c_str(),
                     settings.ca_dir.empty() ? nullptr : settings.ca_dir.c_str()) != 1) {
    return fail("tls.ca_file / tls.ca_dir");
  }
  if (!settings.ca_file.empty()) {
    // Tell clients which CAs their certificate should come from.
    if (STACK_OF(X509_NAME)* names = SSL_load_client_CA_file(settings.ca_file.c_str())) {
      SSL_CTX_set_client_CA_list(ctx, names);
    }
  }
  switch (settings.client_certificates) {
    case ClientCertificates::kNever:
      SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, nullptr);
      break;
    case ClientCertificates::kAllow:
      SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, accept_any_certificate);
      break;
    case ClientCertificates::kDemand:
      if (!has_cas) {
        SSL_CTX_free(ctx);
        return invalid_argument(
            "tls.verify_client = \"demand\" needs tls.ca_file or tls.ca_dir to verify with");
      }
      SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nullptr);
      break;
  }
  // Resumption: tickets are on by default; the session id context lets sessions made with a
  // client certificate resume too.
  static constexpr unsigned char kSessionContext[] = "numadir";
  SSL_CTX_set_session_id_context(ctx, kSessionContext, sizeof(kSessionContext) - 1);
  SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_SERVER);
  // One TLS 1.3 ticket after a full handshake, where OpenSSL sends two (for clients that open
  // connections in parallel; its stateless tickets can be offered again, so one serves them
  // too). Each ticket is a session encoded, encrypted and MACed: the second cost a full
  // handshake about 5-10% more server CPU (perf/RESULTS.md, "TLS: cipher order and tickets").
  // A resumed handshake sends one in either case.
  SSL_CTX_set_num_tickets(ctx, 1);
  // The chain sent with the certificate, settled once: a certificate file without its
  // intermediates is completed from the CA store here, as far as it goes, instead of OpenSSL
  // building (and verifying) the chain again on every full handshake.
  STACK_OF(X509)* chain = nullptr;
  SSL_CTX_get0_chain_certs(ctx, &chain);
  if (chain == nullptr || sk_X509_num(chain) == 0) {
    SSL_CTX_build_cert_chain(ctx, SSL_BUILD_CHAIN_FLAG_NO_ROOT | SSL_BUILD_CHAIN_FLAG_IGNORE_ERROR |
                                      SSL_BUILD_CHAIN_FLAG_CLEAR_ERROR);
    ERR_clear_error();
  }
  SSL_CTX_set_mode(ctx, SSL_MODE_NO_AUTO_CHAIN);
  return ctx;
}

}  // namespace

Result<std::unique_ptr<TlsContext>> TlsContext::create(const TlsSettings& settings) {
  Result<SSL_CTX*> ctx = build_context(settings);
  if (!ctx.ok()) {
    return ctx.status();
  }
  return std::unique_ptr<TlsContext>(new TlsContext(settings, *ctx));
}

TlsContext::~TlsContext() {
  MutexLock lock(mu_);
  SSL_CTX_free(ctx_);
}

Status TlsContext::reload() {
  Result<SSL_CTX*> ctx = build_context(settings_);
  if (!ctx.ok()) {
    return ctx.status();
  }
  SSL_CTX* old = nullptr;
  {
    MutexLock lock(mu_);
    old = ctx_;
    ctx_ = *ctx;
  }
  SSL_CTX_free(old);  // Connections made with it hold their own references.
  return Status();
}

SSL* TlsContext::new_ssl() const {
  MutexLock lock(mu_);
  return SSL_new(ctx_);
}

TlsChannel::TlsChannel(SSL* ssl) : ssl_(ssl) {
  if (!attach_memory_bios()) {
    failed_ = true;
    error_ = "out of memory";
    return;
  }
  SSL_set_accept_state(ssl_);
}

bool TlsChannel::attach_memory_bios() {
  BIO* in = BIO_new(BIO_s_mem());
  BIO* out = BIO_new(BIO_s_mem());
  if (in == nullptr || out == nullptr) {
    BIO_free(in);
    BIO_free(out);
    return false;
  }
  // An empty read BIO means "wait for more", not end of file.
  BIO_set_mem_eof_return(in, -1);
  SSL_set_bio(ssl_, in, out);  // Frees the ones it had.
  return true;
}

TlsChannel::~TlsChannel() {
  // The connection ends without a close_notify from the server (LDAP closes after an unbind or
  // on the client's EOF), and OpenSSL drops from the server's cache the session of an SSL freed
  // without one: a TLS 1.2 client that takes no tickets could then never resume. A session
  // whose handshake finished and whose records all verified stays resumable (RFC 5246
  // section 7.2.1 no longer ties resumption to a clean close).
  if (handshake_done_ && !failed_) {
    SSL_set_shutdown(ssl_, SSL_SENT_SHUTDOWN | SSL_RECEIVED_SHUTDOWN);
  }
  SSL_free(ssl_);
}

void TlsChannel::drain(std::string& out) {
  BIO* wbio = SSL_get_wbio(ssl_);
  for (;;) {
    const std::size_t pending = BIO_ctrl_pending(wbio);
    if (pending == 0) {
      return;
    }
    const std::size_t at = out.size();
    out.resize(at + pending);
    const int n = BIO_read(wbio, out.data() + at, static_cast<int>(pending));
    out.resize(at + static_cast<std::size_t>(n > 0 ? n : 0));
    if (n <= 0) {
      return;
    }
  }
}

TlsChannel::InputResult TlsChannel::input(std::string_view cipher, std::string& plain,
                                          std::string& out) {
  if (failed_) {
    return InputResult::kFailed;
  }
  ERR_clear_error();
  if (!cipher.empty() &&
      BIO_write(SSL_get_rbio(ssl_), cipher.data(), static_cast<int>(cipher.size())) !=
          static_cast<int>(cipher.size())) {
    failed_ = true;
    error_ = "out of memory";
    return InputResult::kFailed;
  }
  InputResult result = InputResult::kOk;
  std::array<char, 16384> buffer;
  for (;;) {
    const int n = SSL_read(ssl_, buffer.data(), static_cast<int>(buffer.size()));
    if (n > 0) {
      plain.append(buffer.data(), static_cast<std::size_t>(n));
      continue;
    }
    const int error = SSL_get_error(ssl_, n);
    if (error == SSL_ERROR_WANT_READ || error == SSL_ERROR_WANT_WRITE) {
      break;  // Needs more bytes from the client.
    }
    if (error == SSL_ERROR_ZERO_RETURN) {
      result = InputResult::kClosed;
      break;
    }
    failed_ = true;
    if (!handshake_done_ && SSL_get_verify_result(ssl_) != X509_V_OK) {
      error_ = std::string("client certificate: ") +
               X509_verify_cert_error_string(SSL_get_verify_result(ssl_));
    } else {
      error_ = openssl_errors(handshake_done_ ? "TLS error" : "TLS handshake failed");
    }
    result = InputResult::kFailed;
    break;
  }
  const bool finished_now = !handshake_done_ && SSL_is_init_finished(ssl_);
  handshake_done_ = handshake_done_ || finished_now;
  drain(out);  // Handshake messages, tickets, alerts (also after a failure: the alert).
  if (finished_now && result == InputResult::kOk) {
    renew_bios();
  }
  return result;
}

void TlsChannel::renew_bios() {
  // A memory BIO keeps the largest size it held (the handshake's flights, a certificate
  // chain): an idle connection would hold them for its life. Both are empty here unless the
  // client already sent more (then the old ones stay, for this rare connection).
  if (BIO_ctrl_pending(SSL_get_rbio(ssl_)) == 0 && BIO_ctrl_pending(SSL_get_wbio(ssl_)) == 0) {
    attach_memory_bios();  // Out of memory: the old ones go on serving.
  }
}

Status TlsChannel::output(std::string_view plain, std::string& out) {
  if (failed_ || !handshake_done_) {
    return Status(StatusCode::kInternal, "TLS is not established");
  }
  ERR_clear_error();
  std::size_t done = 0;
  while (done < plain.size()) {
    std::size_t written = 0;
    if (SSL_write_ex(ssl_, plain.data() + done, plain.size() - done, &written) != 1) {
      failed_ = true;
      error_ = openssl_errors("TLS write failed");
      return Status(StatusCode::kInternal, error_);
    }
    done += written;
  }
  drain(out);
  return Status();
}

TlsPeer TlsChannel::peer() const {
  TlsPeer peer;
  peer.protocol = SSL_get_version(ssl_);
  peer.cipher = SSL_get_cipher_name(ssl_);
  peer.resumed = SSL_session_reused(ssl_) == 1;
  X509* certificate = SSL_get0_peer_certificate(ssl_);
  if (certificate == nullptr) {
    return peer;
  }
  peer.has_certificate = true;
  peer.verified = SSL_get_verify_result(ssl_) == X509_V_OK;
  const X509_NAME* name = X509_get_subject_name(certificate);
  if (BIO* bio = BIO_new(BIO_s_mem())) {
    X509_NAME_print_ex(bio, name, 0, XN_FLAG_RFC2253 & ~ASN1_STRFLGS_ESC_MSB);
    char* data = nullptr;
    const long size = BIO_get_mem_data(bio, &data);
    peer.subject.assign(data, static_cast<std::size_t>(size > 0 ? size : 0));
    BIO_free(bio);
  }
  for (int i = 0; i < X509_NAME_entry_count(name); ++i) {
    const X509_NAME_ENTRY* entry = X509_NAME_get_entry(name, i);
    const int nid = OBJ_obj2nid(X509_NAME_ENTRY_get_object(entry));
    unsigned char* utf8 = nullptr;
    const int length = ASN1_STRING_to_UTF8(&utf8, X509_NAME_ENTRY_get_data(entry));
    if (length < 0) {
      continue;
    }
    const char* short_name = nid == NID_undef ? "" : OBJ_nid2sn(nid);
    peer.subject_attributes.emplace_back(
        short_name, std::string(reinterpret_cast<char*>(utf8), static_cast<std::size_t>(length)));
    OPENSSL_free(utf8);
  }
  return peer;
}

}  // namespace numadir::listener
