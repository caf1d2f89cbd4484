// server/operations/external_map.h: SASL EXTERNAL's identities and their mapping to the DN the
// connection is bound as.
//
// Two identities authenticate by EXTERNAL: a TLS client certificate (its subject, through the
// tls.external_map template below) and, over ldapi://, the client process's uid and gid
// (SO_PEERCRED), as slapd names it: "gidNumber=G+uidNumber=U,cn=peercred,cn=external,cn=auth"
// (peercred_dn). Either authentication DN then passes the [[sasl.external_map]] rules
// (ExternalMapRules, slapd's authz-regexp): the first rule whose `match` (a POSIX extended
// regular expression, case-insensitive, as slapd compiles them) matches the DN replaces it with
// its `dn`, where $1..$9 stand for the match's groups ($0 the whole match, $$ a '$'); without a
// matching rule the DN stays the authentication DN itself.
//
// The template is a DN with placeholders: {subject} stands for the whole subject DN (RFC 4514
// string, as OpenSSL prints it), {NAME} for the value of the subject attribute NAME (its short
// name as OpenSSL prints it: cn, uid, emailAddress, o, ou, ...; case-insensitive; the first
// one when repeated), escaped as an RDN value (RFC 4514 §2.4). "{subject}" (the default) binds
// as the subject itself, as slapd does without authz-regexp; "uid={cn},ou=people,dc=example,
// dc=com" maps a certificate for CN=jdoe to that user's entry.
//
// Thread contract: the functions are functions of their arguments. ExternalMapRules: compiled
// once at startup, immutable afterwards; map() may be called from any number of threads.
#pragma once

#include <regex.h>
#include <sys/types.h>

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "listener/tls.h"

namespace numadir::server {

// Returns: `map` with its placeholders replaced from `peer`'s subject.
// Errors: kInvalidArgument naming a placeholder the subject lacks or an unclosed '{'.
Result<std::string> expand_external_map(std::string_view map, const listener::TlsPeer& peer);

// Returns: slapd's authentication DN of a local client: "gidNumber=G+uidNumber=U,cn=peercred,
//   cn=external,cn=auth".
std::string peercred_dn(uid_t uid, gid_t gid);

// One [[sasl.external_map]] entry as configured.
struct ExternalMapRuleSpec {
  std::string match;  // POSIX extended regex over the authentication DN (case-insensitive).
  std::string dn;     // The replacement; $1..$9 the groups.
};

class ExternalMapRules {
 public:
  // Errors: kInvalidArgument "sasl.external_map[N].match: <regerror text>" (N from 0, as in
  // check-config's other keys) for a
  //   regex that does not compile, and "sasl.external_map[N].dn: ..." for a $N past the groups
  //   of its match or a '$' followed by anything but a digit or '$'.
  static Result<std::unique_ptr<ExternalMapRules>> compile(
      const std::vector<ExternalMapRuleSpec>& specs);
  ExternalMapRules(const ExternalMapRules&) = delete;
  ExternalMapRules& operator=(const ExternalMapRules&) = delete;
  ~ExternalMapRules();

  // Returns: `authc_dn` mapped by the first rule that matches it; itself when none does.
  std::string map(std::string_view authc_dn) const;
  std::size_t size() const { return rules_.size(); }

 private:
  struct Rule {
    regex_t regex;
    std::string dn;
  };
  ExternalMapRules() = default;
  std::vector<std::unique_ptr<Rule>> rules_;  // Each compiled; regfree'd by the destructor.
};

}  // namespace numadir::server
