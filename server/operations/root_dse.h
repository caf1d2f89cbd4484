// server/operations/root_dse.h: the root DSE (RFC 4512 §5.1), the entry a base search of ""
// returns: what the server supports, in the attributes slapd publishes.
//
// Thread contract: make_root_dse is a function of its arguments; the Entry it returns is a
// plain value (the handler builds it once and then only reads it, from any worker).
#pragma once

#include <string>

#include "listener/wire/ldap_message.h"
#include "schema/entry.h"

namespace numadir::server {

// Controls the handlers implement (supportedControl).
inline constexpr std::string_view kPagedResultsOid = "1.2.840.113556.1.4.319";  // RFC 2696
inline constexpr std::string_view kManageDsaItOid = "2.16.840.1.113730.3.4.2";  // RFC 3296
// Extended operations (supportedExtension).
inline constexpr std::string_view kWhoAmIOid = "1.3.6.1.4.1.4203.1.11.3";          // RFC 4532
inline constexpr std::string_view kPasswordModifyOid = "1.3.6.1.4.1.4203.1.11.1";  // RFC 3062
inline constexpr std::string_view kStartTlsOid = listener::wire::kStartTlsOid;     // RFC 4511
// The subschema subentry's DN, as published in subschemaSubentry.
inline constexpr std::string_view kSubschemaEntryDn = "cn=Subschema";

struct RootDseOptions {
  std::string suffix;            // namingContexts; empty: none.
  std::string vendor_version;    // vendorVersion; empty: left out.
  bool start_tls = false;        // TLS configured: StartTLS in supportedExtension, and
                                 // supportedSASLMechanisms EXTERNAL.
  std::string monitor_context;   // monitorContext (slapd's: "cn=Monitor"); empty: left out.
  bool password_policy = false;  // The Password Policy control in supportedControl.
  bool ldapi = false;            // An ldapi:// listener: supportedSASLMechanisms EXTERNAL.
};

// Returns: the root DSE, DN "", with objectClass top / OpenLDAProotDSE (slapd's; a user
//   attribute) and the operational attributes structuralObjectClass, monitorContext (when
//   given), namingContexts, subschemaSubentry, supportedControl, supportedExtension,
//   supportedFeatures, supportedLDAPVersion, vendorName and vendorVersion, each named by its
//   schema primary name.
//   supportedSASLMechanisms (EXTERNAL) only with start_tls or ldapi.
schema::Entry make_root_dse(const RootDseOptions& options);

}  // namespace numadir::server
