// expand_external_map (server/operations/external_map.h): SASL EXTERNAL's subject-to-DN templates.
#include "server/operations/external_map.h"

#include <doctest/doctest.h>

namespace numadir::server {
namespace {

listener::TlsPeer peer() {
  listener::TlsPeer peer;
  peer.has_certificate = true;
  peer.verified = true;
  peer.subject = "CN=Doe\\, John,UID=jdoe,O=Example";
  peer.subject_attributes = {
      {"O", "Example"}, {"UID", "jdoe"}, {"CN", "Doe, John"}, {"emailAddress", "jdoe@example.com"}};
  return peer;
}

TEST_CASE("external_map: the whole subject or its attributes") {
  CHECK(*expand_external_map("{subject}", peer()) == "CN=Doe\\, John,UID=jdoe,O=Example");
  CHECK(*expand_external_map("uid={uid},ou=people,dc=example,dc=com", peer()) ==
        "uid=jdoe,ou=people,dc=example,dc=com");
  // Names are case-insensitive; values are escaped as RDN values.
  CHECK(*expand_external_map("cn={cn},ou=people", peer()) == "cn=Doe\\, John,ou=people");
  CHECK(*expand_external_map("mail={EMAILADDRESS},dc=x", peer()) == "mail=jdoe@example.com,dc=x");
  CHECK(*expand_external_map("cn=fixed", peer()) == "cn=fixed");
}

TEST_CASE("external_map: a missing attribute or an unclosed brace is an error") {
  auto missing = expand_external_map("uid={serialNumber}", peer());
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.status().message().find("serialNumber") != std::string::npos);
  CHECK_FALSE(expand_external_map("uid={uid", peer()).ok());
}

}  // namespace
}  // namespace numadir::server
