// server/operations/operation_context.cc: building the shared context (access rules, the root DSE,
// the subschema entry, the DNs compared against) and the DN helpers.
#include "server/operations/operation_context.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <utility>

#include "server/monitoring/monitor.h"
#include "server/operations/root_dse.h"
#include "server/operations/subschema.h"

namespace numadir::server {
namespace {

// Returns: normalize(dn), or "" when it fails.
template <typename Normalize>
std::string normalized_or_empty(std::string_view dn, const Normalize& normalize) {
  if (dn.empty()) {
    return std::string();
  }
  Result<std::string> ndn = normalize(dn);
  return ndn.ok() ? std::move(*ndn) : std::string();
}

// Returns: `suffix` normalized as the directory keys it (parsed without the schema checks of
// parse_dn, as the directory parses it), or "" when it does not parse.
std::string suffix_ndn_of(std::string_view suffix, const schema::DnValueNormalizer& normalizer) {
  Result<schema::Dn> parsed = schema::Dn::parse(suffix);
  return parsed.ok() ? parsed->normalized(&normalizer) : std::string();
}

// Compiles `rules`, or on failure a policy under which only the rootdn may do anything.
template <typename NormalizeDn>
std::unique_ptr<const AccessControl> compile_access(const backend::AttributeCatalog& catalog,
                                                    const std::vector<AccessRuleSpec>& rules,
                                                    const NormalizeDn& normalize_dn) {
  Result<std::unique_ptr<AccessControl>> access =
      AccessControl::create(catalog, rules, normalize_dn);
  if (access.ok()) {
    return std::move(*access);
  }
  // Only the rootdn: a rule that does not compile must not open the directory wider.
  std::fprintf(stderr, "numadir: %s; only the rootdn has access\n",
               access.status().message().c_str());
  const AccessRuleSpec nobody{"access[deny]",
                              "",
                              DnScope::kSubtree,
                              "",
                              {},
                              {AccessSubjectSpec{"*", "", DnScope::kBase, "", 0}}};
  return std::move(*AccessControl::create(
      catalog, {nobody}, [](std::string_view dn) { return schema::normalize_dn(dn); }));
}

}  // namespace

bool ndn_at_or_below(std::string_view ndn, std::string_view base_ndn) {
  if (ndn == base_ndn) {
    return true;
  }
  if (base_ndn.empty() || ndn.size() <= base_ndn.size() + 1 || !ndn.ends_with(base_ndn)) {
    return false;
  }
  // The separating comma must not be escaped: count the backslashes before it.
  std::size_t at = ndn.size() - base_ndn.size() - 1;
  if (ndn[at] != ',') {
    return false;
  }
  std::size_t backslashes = 0;
  while (at > 0 && ndn[at - 1] == '\\') {
    ++backslashes;
    --at;
  }
  return backslashes % 2 == 0;
}

OperationContext::OperationContext(backend::Directory& directory, HandlerOptions options)
    : directory_(directory),
      options_(std::move(options)),
      catalog_(directory.schema()),
      dn_normalizer_(directory.dn_normalizer()),
      verify_policy_{.allow_cleartext = options_.allow_cleartext_passwords},
      user_password_type_(directory.schema().attribute_type("userPassword")),
      root_ndn_(normalized_or_empty(options_.root_dn,
                                    [this](std::string_view dn) { return normalize_dn(dn); })),
      root_dse_(make_root_dse(
          RootDseOptions{directory.options().suffix, options_.vendor_version, options_.tls,
                         options_.monitor != nullptr ? std::string(kMonitorDn) : std::string()})),
      subschema_(make_subschema_entry(directory.schema(), std::chrono::system_clock::now())),
      subschema_ndn_(schema::Dn::parse(kSubschemaEntryDn)->normalized(&dn_normalizer_)),
      suffix_ndn_(suffix_ndn_of(directory.options().suffix, dn_normalizer_)),
      monitor_ndn_(normalized_or_empty(kMonitorDn,
                                       [this](std::string_view dn) { return normalize_dn(dn); })),
      access_(compile_access(catalog_, options_.access_rules,
                             [this](std::string_view dn) { return normalize_dn(dn); })) {}

OperationContext::~OperationContext() = default;

Status OperationContext::check_access_rules(const schema::Schema& schema,
                                            const std::vector<AccessRuleSpec>& rules) {
  const backend::AttributeCatalog catalog(schema);
  const backend::SchemaDnNormalizer normalizer(schema);
  Result<std::unique_ptr<AccessControl>> access =
      AccessControl::create(catalog, rules, [&](std::string_view dn) -> Result<std::string> {
        Result<schema::Dn> parsed = schema::Dn::parse(dn);
        if (!parsed.ok()) {
          return parsed.status();
        }
        for (std::size_t i = 0; i < parsed->rdn_count(); ++i) {
          for (const schema::Ava& ava : parsed->rdn(i)) {
            if (schema.attribute_type(ava.type) == nullptr) {
              return invalid_argument("attribute type \"" + std::string(ava.type) +
                                      "\" of the DN is not in the schema");
            }
          }
        }
        return parsed->normalized(&normalizer);
      });
  return access.ok() ? Status() : access.status();
}

Status OperationContext::check_rdns(const schema::Dn& dn, std::size_t first,
                                    std::size_t end) const {
  const schema::Schema& schema = directory_.schema();
  for (std::size_t i = first; i < end; ++i) {
    for (const schema::Ava& ava : dn.rdn(i)) {
      const schema::AttributeType* type = schema.attribute_type(ava.type);
      if (type == nullptr) {
        return Status(StatusCode::kInvalidDnSyntax,
                      "DN: undefined attribute type " + std::string(ava.type));
      }
      if (!ava.hex_form && type->syntax != nullptr && !type->syntax->validate(ava.value)) {
        return Status(StatusCode::kInvalidDnSyntax,
                      "DN: value of " + std::string(ava.type) + " invalid per syntax");
      }
    }
  }
  return Status();
}

Result<schema::Dn> OperationContext::parse_dn(std::string_view dn) const {
  Result<schema::Dn> parsed = schema::Dn::parse(dn);
  if (!parsed.ok()) {
    return Status(StatusCode::kInvalidDnSyntax, parsed.status().message());
  }
  NUMADIR_RETURN_IF_ERROR(check_dn(*parsed));
  return parsed;
}

Result<std::string> OperationContext::normalize_dn(std::string_view dn) const {
  Result<schema::Dn> parsed = parse_dn(dn);
  if (!parsed.ok()) {
    return parsed.status();
  }
  return parsed->normalized(&dn_normalizer_);
}

Status OperationContext::normalize_dn_into(std::string_view dn, std::string& out,
                                           DnScratch& scratch) const {
  schema::Dn& parsed = scratch.parsed;
  if (Status status = schema::Dn::parse_into(dn, parsed); !status.ok()) {
    return Status(StatusCode::kInvalidDnSyntax, status.message());
  }
  const std::size_t rdns = parsed.rdn_count();
  const bool known_parent = rdns > 1 && scratch.has_parent && parsed.ends_with(scratch.parent, 1);
  NUMADIR_RETURN_IF_ERROR(check_rdns(parsed, 0, known_parent ? 1 : rdns));
  out.clear();
  parsed.append_normalized_rdns(out, &dn_normalizer_, 0, std::min<std::size_t>(rdns, 1));
  if (known_parent) {
    out += ',';
    out += scratch.parent_ndn;
  } else if (rdns > 1) {
    out += ',';
    const std::size_t parent_start = out.size();
    parsed.append_normalized_rdns(out, &dn_normalizer_, 1, rdns);
    scratch.parent = parsed.parent();
    scratch.parent_ndn.assign(out, parent_start);
    scratch.has_parent = true;
  }
  return Status();
}

Result<std::string_view> OperationContext::normalize_dn_cached(std::string_view dn,
                                                               DnScratch& scratch) const {
  if (scratch.has_cached && scratch.cached_dn == dn) {
    return std::string_view(scratch.cached_ndn);
  }
  scratch.has_cached = false;
  NUMADIR_RETURN_IF_ERROR(normalize_dn_into(dn, scratch.cached_ndn, scratch));
  scratch.cached_dn.assign(dn);
  scratch.has_cached = true;
  return std::string_view(scratch.cached_ndn);
}

bool OperationContext::in_naming_context(std::string_view ndn) const {
  return suffix_ndn_.empty() || (!ndn.empty() && ndn_at_or_below(ndn, suffix_ndn_));
}

const schema::AttributeType* OperationContext::attribute_type(std::string_view description) const {
  const backend::AttributeInfo* info =
      catalog_.resolve(schema::split_description(description).first);
  return info != nullptr ? info->type : nullptr;
}

}  // namespace numadir::server
