// server/operations/search_scope.h: a search request's scope as the backend takes it, for the
// search operation, the sync provider and the replication consumer alike.
#pragma once

#include "backend/directory_read.h"
#include "listener/wire/ldap_message.h"

namespace numadir::server {

// Returns: `scope` as a backend::Scope (subordinateSubtree: kChildren).
constexpr backend::Scope backend_scope(listener::wire::SearchScope scope) {
  switch (scope) {
    case listener::wire::SearchScope::kBaseObject:
      return backend::Scope::kBase;
    case listener::wire::SearchScope::kSingleLevel:
      return backend::Scope::kOneLevel;
    case listener::wire::SearchScope::kWholeSubtree:
      return backend::Scope::kSubtree;
    case listener::wire::SearchScope::kSubordinateSubtree:
      return backend::Scope::kChildren;
  }
  return backend::Scope::kSubtree;
}

}  // namespace numadir::server
