// server/operations/operation_context.cc: building the shared context (access rules, the root DSE,
// the subschema entry, the DNs compared against) and the DN helpers.
#include "server/operations/operation_context.h"

#include <algorithm>
#include <chrono>
#include <optional>
#include <utility>

#include "server/monitoring/monitor_dn.h"
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

// Returns: where `dn`'s first RDN would end if the rest is a ',' and the parent text of
//   `scratch`'s memo; nullopt when it is not, or when `dn` is longer than the parser allows
//   (which the whole parse reports).
std::optional<std::size_t> first_rdn_end_before(std::string_view dn, const DnScratch& scratch) {
  const std::string_view parent = scratch.parent_text;
  if (!scratch.has_parent || parent.empty() || dn.size() <= parent.size() + 1 ||
      dn.size() > schema::DnParseLimits{}.max_bytes) {
    return std::nullopt;
  }
  const std::size_t end = dn.size() - parent.size() - 1;
  if (dn[end] != ',' || dn.substr(end + 1) != parent) {
    return std::nullopt;
  }
  return end;
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
      verify_policy_{.allow_cleartext = options_.allow_cleartext_passwords,
                     .limits = options_.password_limits},
      user_password_type_(directory.schema().attribute_type("userPassword")),
      root_ndn_(normalized_or_empty(options_.root_dn,
                                    [this](std::string_view dn) { return normalize_dn(dn); })),
      root_dse_(make_root_dse(
          RootDseOptions{directory.options().suffix, options_.vendor_version, options_.tls,
                         options_.monitor != nullptr ? std::string(kMonitorDn) : std::string(),
                         options_.password_policy, options_.ldapi})),
      subschema_(make_subschema_entry(directory.schema(), std::chrono::system_clock::now())),
      subschema_ndn_(schema::Dn::parse(kSubschemaEntryDn)->normalized(&dn_normalizer_)),
      suffix_ndn_(suffix_ndn_of(directory.options().suffix, dn_normalizer_)),
      monitor_ndn_(normalized_or_empty(kMonitorDn,
                                       [this](std::string_view dn) { return normalize_dn(dn); })),
      replicated_ndns_([this] {
        std::vector<std::pair<std::string, std::string>> areas;
        for (const HandlerOptions::ReplicatedArea& area : options_.replicated) {
          Result<std::string> ndn = normalize_dn(area.base_dn);
          if (ndn.ok()) {
            areas.emplace_back(std::move(*ndn), area.updateref);
          }
        }
        return areas;
      }()),
      default_access_(options_.access != nullptr
                          ? nullptr
                          : std::make_unique<const AccessControl>(directory.schema())),
      access_(options_.access != nullptr ? *options_.access : *default_access_) {}

OperationContext::~OperationContext() = default;

Result<std::unique_ptr<AccessControl>> OperationContext::compile_access_rules(
    const backend::AttributeCatalog& catalog, const std::vector<AccessRuleSpec>& rules) {
  const schema::Schema& schema = catalog.schema();
  // The normalizer a Directory over `schema` keys DNs with (stateless but for the schema).
  const backend::SchemaDnNormalizer normalizer(schema);
  // As normalize_dn: what a rule names is what a request naming the same DN reaches.
  return AccessControl::create(catalog, rules, [&](std::string_view dn) -> Result<std::string> {
    Result<schema::Dn> parsed = parse_checked_dn(schema, dn);
    if (!parsed.ok()) {
      return parsed.status();
    }
    return parsed->normalized(&normalizer);
  });
}

Status check_dn_rdns(const schema::Schema& schema, const schema::Dn& dn, std::size_t first,
                     std::size_t end) {
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

Result<schema::Dn> parse_checked_dn(const schema::Schema& schema, std::string_view dn) {
  Result<schema::Dn> parsed = schema::Dn::parse(dn);
  if (!parsed.ok()) {
    return Status(StatusCode::kInvalidDnSyntax, parsed.status().message());
  }
  NUMADIR_RETURN_IF_ERROR(check_dn_rdns(schema, *parsed, 0, parsed->rdn_count()));
  return parsed;
}

Result<schema::Dn> OperationContext::parse_dn(std::string_view dn) const {
  return parse_checked_dn(directory_.schema(), dn);
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
  // A DN that is one RDN, a ',' and the memo's parent text: only the first RDN is parsed and
  // checked. A first RDN that does not parse alone goes the whole way, so that errors name
  // offsets of the whole DN.
  const std::optional<std::size_t> end = first_rdn_end_before(dn, scratch);
  const bool text_parent = end.has_value() &&
                           schema::Dn::parse_into(dn.substr(0, *end), parsed).ok() &&
                           parsed.rdn_count() == 1;
  if (!text_parent) {
    if (Status status = schema::Dn::parse_into(dn, parsed); !status.ok()) {
      return Status(StatusCode::kInvalidDnSyntax, status.message());
    }
  }
  const std::size_t rdns = parsed.rdn_count();
  const bool known_parent =
      text_parent || (rdns > 1 && scratch.has_parent && parsed.ends_with(scratch.parent, 1));
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
    const std::size_t separator = schema::first_rdn_separator(dn);
    scratch.parent_text.assign(separator < dn.size() ? dn.substr(separator + 1) : "");
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

const std::string* OperationContext::update_referral(std::string_view ndn) const {
  for (const auto& [base_ndn, updateref] : replicated_ndns_) {
    if (ndn_at_or_below(ndn, base_ndn)) {
      return &updateref;
    }
  }
  return nullptr;
}

const schema::AttributeType* OperationContext::attribute_type(std::string_view description) const {
  const backend::AttributeInfo* info =
      catalog_.resolve(schema::split_description(description).first);
  return info != nullptr ? info->type : nullptr;
}

}  // namespace numadir::server
