// perf/tls_handshake_bench: the server's CPU per TLS handshake, without sockets. An in-process
// OpenSSL client and numadir's TlsChannel (listener/tls.h) pass their bytes to each other over
// memory; only the server's side is timed (the thread's CPU clock around making the SSL, every
// TlsChannel::input call and freeing it), so neither TCP nor the client nor the machine's other
// load enters the figure. For each certificate (RSA-2048, ECDSA P-256), protocol (TLS 1.3, 1.2)
// and kind (a full handshake, one resumed with the client's previous session) it compares
// settings in interleaved rounds and prints medians: numadir's defaults (AES-128-GCM / SHA-256
// first, one TLS 1.3 ticket), the same with two tickets, and OpenSSL's defaults (AES-256-GCM /
// SHA-384 first, two tickets). Beside them, what the cryptography alone costs, timed
// the same way: one signature with each key and one X25519 key share made and used.
//
//   build/release/perf/tls-handshake-bench [--handshakes 1000] [--rounds 5]
#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "base/check.h"
#include "listener/tls.h"

namespace numadir::perf {
namespace {

using listener::TlsChannel;
using listener::TlsContext;
using listener::TlsSettings;

// The calling thread's CPU time in µs.
double thread_cpu_us() {
  timespec now{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
  return static_cast<double>(now.tv_sec) * 1e6 + static_cast<double>(now.tv_nsec) / 1e3;
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

// A self-signed certificate for "localhost" with a new key of `key_type` ("rsa" or "ec"),
// written as server.crt / server.key into `folder`.
void write_certificate(const std::filesystem::path& folder, std::string_view key_type) {
  EVP_PKEY* key = key_type == "rsa" ? EVP_RSA_gen(2048) : EVP_EC_gen("P-256");
  NUMADIR_CHECK(key != nullptr, "key generation failed");
  X509* x = X509_new();
  X509_set_version(x, X509_VERSION_3);
  ASN1_INTEGER_set(X509_get_serialNumber(x), 1);
  X509_gmtime_adj(X509_getm_notBefore(x), 0);
  X509_gmtime_adj(X509_getm_notAfter(x), 86400);
  X509_NAME* name = X509_get_subject_name(x);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>("localhost"), -1, -1, 0);
  X509_set_issuer_name(x, name);
  X509_set_pubkey(x, key);
  NUMADIR_CHECK(X509_sign(x, key, EVP_sha256()) > 0, "signing the certificate failed");
  FILE* out = fopen((folder / "server.crt").c_str(), "w");
  NUMADIR_CHECK(out != nullptr, "cannot write the certificate files");
  PEM_write_X509(out, x);
  fclose(out);
  out = fopen((folder / "server.key").c_str(), "w");
  NUMADIR_CHECK(out != nullptr, "cannot write the certificate files");
  PEM_write_PrivateKey(out, key, nullptr, nullptr, 0, nullptr, nullptr);
  fclose(out);
  X509_free(x);
  EVP_PKEY_free(key);
}

struct Variant {
  const char* name;
  const char* ciphers;       // "": numadir's default.
  const char* ciphersuites;  // "": numadir's default.
  int tickets;               // TLS 1.3 tickets after a full handshake; -1: numadir's default.
};

// The first is numadir's defaults and the last OpenSSL's; between them, one change at a time.
constexpr Variant kVariants[] = {
    {"numadir's defaults", "", "", -1},
    {"two TLS 1.3 tickets", "", "", 2},
    {"OpenSSL's defaults", "DEFAULT",
     "TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256:TLS_AES_128_GCM_SHA256", 2},
};

// One client context per protocol version; sessions to resume come from it.
class Client {
 public:
  explicit Client(int max_version) : ctx_(SSL_CTX_new(TLS_client_method())) {
    SSL_CTX_set_max_proto_version(ctx_, max_version);
    SSL_CTX_set_verify(ctx_, SSL_VERIFY_NONE, nullptr);
  }
  ~Client() {
    SSL_SESSION_free(session_);
    SSL_CTX_free(ctx_);
  }
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  // Runs one handshake against a new TlsChannel of `context`; with `resume`, offers the
  // session of the previous one. Returns: the server's CPU µs, or -1 when the handshake
  // failed or (with `resume`) did not resume.
  double handshake(const TlsContext& context, bool resume, int tickets) {
    SSL* ssl = SSL_new(ctx_);
    SSL_set_bio(ssl, BIO_new(BIO_s_mem()), BIO_new(BIO_s_mem()));
    SSL_set_connect_state(ssl);
    if (resume && session_ != nullptr) {
      SSL_set_session(ssl, session_);
    }
    double server_us = 0;
    double start = thread_cpu_us();
    SSL* server_ssl = context.new_ssl();
    if (tickets >= 0) {
      SSL_set_num_tickets(server_ssl, static_cast<std::size_t>(tickets));
    }
    auto channel = std::make_unique<TlsChannel>(server_ssl);
    server_us += thread_cpu_us() - start;
    std::string to_server = step(ssl, "");
    std::string plain;
    bool ok = true;
    for (int round = 0; round < 10 && !to_server.empty(); ++round) {
      std::string to_client;
      start = thread_cpu_us();
      ok = channel->input(to_server, plain, to_client) == TlsChannel::InputResult::kOk;
      server_us += thread_cpu_us() - start;
      if (!ok) {
        break;
      }
      to_server = step(ssl, to_client);  // With TLS 1.3, reads the tickets too.
    }
    ok = ok && channel->handshake_done() &&
         (!resume || session_ == nullptr || SSL_session_reused(ssl) == 1);
    start = thread_cpu_us();
    channel.reset();
    server_us += thread_cpu_us() - start;
    SSL_shutdown(ssl);  // A session freed without close_notify would not be resumable.
    SSL_SESSION_free(session_);
    session_ = SSL_get1_session(ssl);
    SSL_free(ssl);
    return ok ? server_us : -1;
  }

 private:
  static std::string step(SSL* ssl, std::string_view in) {
    if (!in.empty()) {
      BIO_write(SSL_get_rbio(ssl), in.data(), static_cast<int>(in.size()));
    }
    if (!SSL_is_init_finished(ssl)) {
      SSL_do_handshake(ssl);
    }
    char buffer[4096];
    while (SSL_read(ssl, buffer, sizeof(buffer)) > 0) {
    }
    std::string out;
    int n = 0;
    while ((n = BIO_read(SSL_get_wbio(ssl), buffer, sizeof(buffer))) > 0) {
      out.append(buffer, static_cast<std::size_t>(n));
    }
    return out;
  }

  SSL_CTX* ctx_;
  SSL_SESSION* session_ = nullptr;
};

// Median over `rounds` of the mean CPU µs of `operation` run `count` times.
double time_primitive(int rounds, int count, const std::function<void()>& operation) {
  std::vector<double> means;
  for (int round = 0; round < rounds; ++round) {
    const double start = thread_cpu_us();
    for (int i = 0; i < count; ++i) {
      operation();
    }
    means.push_back((thread_cpu_us() - start) / count);
  }
  return median(means);
}

double signature_us(std::string_view key_type, int rounds) {
  EVP_PKEY* key = key_type == "rsa" ? EVP_RSA_gen(2048) : EVP_EC_gen("P-256");
  const unsigned char data[32] = {1, 2, 3};
  unsigned char signature[512];
  const double us = time_primitive(rounds, 200, [&] {
    EVP_MD_CTX* md = EVP_MD_CTX_new();
    std::size_t length = sizeof(signature);
    NUMADIR_CHECK(EVP_DigestSignInit(md, nullptr, EVP_sha256(), nullptr, key) == 1,
                  "OpenSSL call failed");
    NUMADIR_CHECK(EVP_DigestSign(md, signature, &length, data, sizeof(data)) == 1,
                  "OpenSSL call failed");
    EVP_MD_CTX_free(md);
  });
  EVP_PKEY_free(key);
  return us;
}

// A server's side of one X25519 exchange: make a key share, derive the secret with the peer's.
double x25519_us(int rounds) {
  EVP_PKEY* peer = EVP_PKEY_Q_keygen(nullptr, nullptr, "X25519");
  const double us = time_primitive(rounds, 500, [&] {
    EVP_PKEY* own = EVP_PKEY_Q_keygen(nullptr, nullptr, "X25519");
    EVP_PKEY_CTX* ctx = EVP_PKEY_CTX_new(own, nullptr);
    unsigned char secret[32];
    std::size_t length = sizeof(secret);
    NUMADIR_CHECK(EVP_PKEY_derive_init(ctx) == 1 && EVP_PKEY_derive_set_peer(ctx, peer) == 1 &&
                      EVP_PKEY_derive(ctx, secret, &length) == 1,
                  "OpenSSL call failed");
    EVP_PKEY_CTX_free(ctx);
    EVP_PKEY_free(own);
  });
  EVP_PKEY_free(peer);
  return us;
}

int run(int handshakes, int rounds) {
  char folder_template[] = "/tmp/numadir-tls-bench-XXXXXX";
  const char* made = mkdtemp(folder_template);
  NUMADIR_CHECK(made != nullptr, "mkdtemp failed");
  const std::filesystem::path folder(made);
  std::printf(
      "Server CPU µs per handshake (median of %d interleaved rounds of %d handshakes; "
      "µs of the server's thread only, no sockets)\n\n",
      rounds, handshakes);
  std::printf("| certificate | protocol | handshake |");
  for (const Variant& variant : kVariants) {
    std::printf(" %s |", variant.name);
  }
  std::printf(" numadir's / OpenSSL's |\n|---|---|---|");
  for (std::size_t v = 0; v <= std::size(kVariants); ++v) {
    std::printf("---:|");
  }
  std::printf("\n");
  int failures = 0;
  for (const char* key_type : {"ec", "rsa"}) {
    const std::filesystem::path key_folder = folder / key_type;
    std::filesystem::create_directories(key_folder);
    write_certificate(key_folder, key_type);
    std::vector<std::unique_ptr<TlsContext>> contexts;
    for (const Variant& variant : kVariants) {
      TlsSettings settings;
      settings.certificate = key_folder / "server.crt";
      settings.key = key_folder / "server.key";
      settings.ciphers = variant.ciphers;
      settings.ciphersuites = variant.ciphersuites;
      auto context = TlsContext::create(settings);
      NUMADIR_CHECK(context.ok(), "TlsContext::create failed");
      contexts.push_back(std::move(*context));
    }
    for (const int version : {TLS1_3_VERSION, TLS1_2_VERSION}) {
      for (const bool resume : {false, true}) {
        // samples[variant]: one mean per round.
        std::vector<std::vector<double>> samples(contexts.size());
        for (int round = 0; round < rounds; ++round) {
          for (std::size_t v = 0; v < contexts.size(); ++v) {
            Client client(version);
            const int tickets = kVariants[v].tickets;
            client.handshake(*contexts[v], false, tickets);  // Warms up, gives a session.
            double total = 0;
            for (int i = 0; i < handshakes; ++i) {
              const double us = client.handshake(*contexts[v], resume, tickets);
              failures += us < 0 ? 1 : 0;
              total += us < 0 ? 0 : us;
            }
            samples[v].push_back(total / handshakes);
          }
        }
        std::printf("| %s | %s | %s |",
                    std::string_view(key_type) == "rsa" ? "RSA-2048" : "ECDSA P-256",
                    version == TLS1_3_VERSION ? "TLS 1.3" : "TLS 1.2", resume ? "resumed" : "full");
        for (const std::vector<double>& variant : samples) {
          std::printf(" %.1f |", median(variant));
        }
        std::printf(" %.2f |\n", median(samples.front()) / median(samples.back()));
        std::fflush(stdout);
      }
    }
  }
  std::printf("\nThe cryptography alone, µs of CPU (median of %d rounds):\n\n", rounds);
  std::printf("| operation | µs |\n|---|---:|\n");
  std::printf("| RSA-2048 signature (SHA-256) | %.1f |\n", signature_us("rsa", rounds));
  std::printf("| ECDSA P-256 signature (SHA-256) | %.1f |\n", signature_us("ec", rounds));
  std::printf("| X25519 key share made and secret derived | %.1f |\n", x25519_us(rounds));
  std::filesystem::remove_all(folder);
  if (failures > 0) {
    std::fprintf(stderr, "tls-handshake-bench: %d handshakes failed or did not resume\n", failures);
    return 1;
  }
  return 0;
}

}  // namespace
}  // namespace numadir::perf

int main(int argc, char** argv) {
  CLI::App app{
      "The server's CPU per TLS handshake, in process: numadir's TLS defaults "
      "beside OpenSSL's, full and resumed, TLS 1.3 and 1.2, RSA and ECDSA"};
  int handshakes = 1000;
  int rounds = 5;
  app.add_option("--handshakes", handshakes, "handshakes per round and point")
      ->check(CLI::Range(1, 1000000));
  app.add_option("--rounds", rounds, "interleaved rounds (the median is printed)")
      ->check(CLI::Range(1, 1000));
  CLI11_PARSE(app, argc, argv);
  return numadir::perf::run(handshakes, rounds);
}
