// tests/schema/shipped_schema.h: the shipped schema, loaded once per test program.
//
// Thread contract: call from any test thread (a function-local static).
#pragma once

#include <utility>

#include "base/check.h"
#include "schema/schema.h"

namespace numadir::schema::testing {

inline const Schema& shipped() {
  static const Schema schema = [] {
    Result<Schema> loaded = Schema::load_default();
    NUMADIR_CHECK(loaded.ok(), loaded.status().to_string().c_str());
    return std::move(loaded).value();
  }();
  return schema;
}

}  // namespace numadir::schema::testing
