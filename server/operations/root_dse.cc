// server/operations/root_dse.cc: the root DSE's contents.
#include "server/operations/root_dse.h"

#include <utility>
#include <vector>

#include "server/operations/password_policy.h"

namespace numadir::server {
namespace {

void add(schema::Entry& entry, std::string description, std::vector<std::string> values) {
  entry.attributes.push_back(schema::EntryAttribute{std::move(description), std::move(values)});
}

}  // namespace

schema::Entry make_root_dse(const RootDseOptions& options) {
  schema::Entry entry;
  add(entry, "objectClass", {"top", "OpenLDAProotDSE"});
  add(entry, "structuralObjectClass", {"OpenLDAProotDSE"});
  if (!options.monitor_context.empty()) {
    add(entry, "monitorContext", {options.monitor_context});
  }
  if (!options.suffix.empty()) {
    add(entry, "namingContexts", {options.suffix});
  }
  add(entry, "subschemaSubentry", {std::string(kSubschemaEntryDn)});
  std::vector<std::string> controls = {std::string(kManageDsaItOid), std::string(kPagedResultsOid)};
  if (options.password_policy) {
    controls.emplace_back(kPasswordPolicyOid);
  }
  add(entry, "supportedControl", std::move(controls));
  std::vector<std::string> extensions = {std::string(kWhoAmIOid), std::string(kPasswordModifyOid)};
  if (options.start_tls) {
    extensions.emplace_back(kStartTlsOid);
  }
  add(entry, "supportedExtension", std::move(extensions));
  if (options.start_tls || options.ldapi) {
    // With a client certificate, or a local client's peer credentials.
    add(entry, "supportedSASLMechanisms", {"EXTERNAL"});
  }
  add(entry, "supportedFeatures",
      {
          "1.3.6.1.1.14",            // RFC 4525 Modify-Increment
          "1.3.6.1.4.1.4203.1.5.1",  // RFC 3673 all operational attributes ("+")
          "1.3.6.1.4.1.4203.1.5.2",  // RFC 4529 "@objectclass" requests
          "1.3.6.1.4.1.4203.1.5.3",  // RFC 4526 absolute true and false filters
      });
  add(entry, "supportedLDAPVersion", {"3"});
  add(entry, "vendorName", {"numadir"});
  if (!options.vendor_version.empty()) {
    add(entry, "vendorVersion", {options.vendor_version});
  }
  return entry;
}

}  // namespace numadir::server
