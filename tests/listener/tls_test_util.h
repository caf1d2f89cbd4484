// tests/listener/tls_test_util.h: a throwaway PKI for TLS tests, made with OpenSSL's API in a
// temporary directory: a CA, a server certificate for localhost, a client certificate for
// CN=user5 from the same CA, and one from another CA.
#pragma once

#include <doctest/doctest.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>

#include "listener/tls.h"

namespace numadir::listener::testing {

struct KeyAndCertificate {
  EVP_PKEY* key = nullptr;
  X509* certificate = nullptr;
  ~KeyAndCertificate() {
    X509_free(certificate);
    EVP_PKEY_free(key);
  }
};

// Makes a key and a certificate for `subject` (e.g. "CN=localhost"), signed by `issuer` (itself
// when nullptr), valid from `from_days` to `to_days` around now.
inline std::unique_ptr<KeyAndCertificate> make_certificate(const std::string& common_name,
                                                           const KeyAndCertificate* issuer,
                                                           long from_days = -1, long to_days = 30) {
  auto out = std::make_unique<KeyAndCertificate>();
  out->key = EVP_EC_gen("P-256");
  REQUIRE(out->key != nullptr);
  X509* x = X509_new();
  out->certificate = x;
  X509_set_version(x, 2);
  static long serial = 1;  // Distinct serials, as a CA would give.
  ASN1_INTEGER_set(X509_get_serialNumber(x), ++serial);
  X509_gmtime_adj(X509_getm_notBefore(x), from_days * 86400);
  X509_gmtime_adj(X509_getm_notAfter(x), to_days * 86400);
  X509_set_pubkey(x, out->key);
  X509_NAME* name = X509_get_subject_name(x);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8,
                             reinterpret_cast<const unsigned char*>(common_name.c_str()), -1, -1,
                             0);
  X509_set_issuer_name(x, issuer != nullptr ? X509_get_subject_name(issuer->certificate) : name);
  if (issuer == nullptr) {
    X509V3_CTX ctx;
    X509V3_set_ctx_nodb(&ctx);
    X509V3_set_ctx(&ctx, x, x, nullptr, nullptr, 0);
    X509_EXTENSION* ca = X509V3_EXT_conf_nid(nullptr, &ctx, NID_basic_constraints, "CA:TRUE");
    X509_add_ext(x, ca, -1);
    X509_EXTENSION_free(ca);
  }
  REQUIRE(X509_sign(x, issuer != nullptr ? issuer->key : out->key, EVP_sha256()) > 0);
  return out;
}

inline void write_pem(const std::filesystem::path& path, const KeyAndCertificate& pair, bool key) {
  FILE* file = std::fopen(path.c_str(), "w");
  REQUIRE(file != nullptr);
  if (key) {
    PEM_write_PrivateKey(file, pair.key, nullptr, nullptr, 0, nullptr, nullptr);
  } else {
    PEM_write_X509(file, pair.certificate);
  }
  std::fclose(file);
}

// A CA, a server certificate and key, and client certificates, in a temporary directory.
class Pki {
 public:
  Pki() {
    dir_ = std::filesystem::temp_directory_path() /
           ("numadir-tls-test-" + std::to_string(getpid()) + "-" + std::to_string(counter_++));
    std::filesystem::create_directories(dir_);
    ca_ = make_certificate("Test CA", nullptr, -1, 3650);
    server_ = make_certificate("localhost", ca_.get());
    client_ = make_certificate("user5", ca_.get());
    stranger_ca_ = make_certificate("Other CA", nullptr, -1, 3650);
    stranger_ = make_certificate("intruder", stranger_ca_.get());
    write_pem(path("ca.crt"), *ca_, false);
    write_pem(path("server.crt"), *server_, false);
    write_pem(path("server.key"), *server_, true);
    write_pem(path("client.key"), *client_, true);
  }
  ~Pki() { std::filesystem::remove_all(dir_); }
  std::filesystem::path path(const std::string& name) const { return dir_ / name; }
  TlsSettings settings(ClientCertificates mode = ClientCertificates::kNever) const {
    TlsSettings settings;
    settings.certificate = path("server.crt");
    settings.key = path("server.key");
    settings.ca_file = path("ca.crt");
    settings.client_certificates = mode;
    return settings;
  }
  const KeyAndCertificate& ca() const { return *ca_; }
  const KeyAndCertificate& client() const { return *client_; }
  const KeyAndCertificate& stranger() const { return *stranger_; }
  const KeyAndCertificate& server() const { return *server_; }

 private:
  static inline int counter_ = 0;
  std::filesystem::path dir_;
  std::unique_ptr<KeyAndCertificate> ca_, server_, client_, stranger_ca_, stranger_;
};

}  // namespace numadir::listener::testing
