// tests/server/formats/entry_builder.h: an Entry from a DN and its attributes, for the LDIF
// reader and writer tests.
//
// Thread contract: a free function over values.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "schema/entry.h"

namespace numadir::server::testing {

inline schema::Entry make_entry(std::string dn, std::vector<schema::EntryAttribute> attributes) {
  schema::Entry entry;
  entry.dn = std::move(dn);
  entry.attributes = std::move(attributes);
  return entry;
}

}  // namespace numadir::server::testing
