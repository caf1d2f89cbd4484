// backend/dn_normalizer.h: SchemaDnNormalizer, the DN normalization every part of the server
// agrees on: RDN types become the lower-cased primary name of the schema's attribute type and
// values go through its equality rule. The directory keys entries by it (backend/dn_index.h),
// and the server compares identities and bases by it (Directory::dn_normalizer() hands out the
// directory's own), so a DN the server normalized can be looked up as is
// (Directory::lookup_normalized).
//
// Thread contract: immutable after construction; any thread may call it at once. The schema
// must outlive it.
#pragma once

#include <string>
#include <string_view>

#include "schema/dn.h"
#include "schema/schema.h"

namespace numadir::backend {

// Normalizes DN types to the lower-cased primary name of the schema's attribute type and values
// with its equality rule (falling back to the default folding for unknown types, types without
// an equality rule or values the rule rejects).
class SchemaDnNormalizer : public schema::DnValueNormalizer {
 public:
  // Requires: `schema` outlives this normalizer.
  explicit SchemaDnNormalizer(const schema::Schema& schema) : schema_(schema) {}
  SchemaDnNormalizer(const SchemaDnNormalizer&) = delete;
  SchemaDnNormalizer& operator=(const SchemaDnNormalizer&) = delete;

  std::string normalize_type(std::string_view type) const override;
  std::string normalize(std::string_view type, std::string_view value) const override;
  // One schema lookup for both (normalize() looks up the type normalize_type() returned, which
  // names the same attribute type).
  void normalize_ava(std::string_view type, std::string_view value, std::string& type_out,
                     std::string& value_out) const override;

 private:
  const schema::Schema& schema_;
};

}  // namespace numadir::backend
