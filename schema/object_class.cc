// schema/object_class.cc: ObjectClass::is_subclass_of.
#include "schema/object_class.h"

#include <algorithm>

namespace numadir::schema {

bool ObjectClass::is_subclass_of(const ObjectClass& other) const {
  // RFC 4512 §2.4.1: every entry belongs to 'top', and slapd treats every class as a subclass of
  // it even where the definition names no superior (e.g. 'subschema').
  if (other.oid == kTopOid) {
    return true;
  }
  // The common case, a single chain of superiors, needs no memory.
  const ObjectClass* current = this;
  while (true) {
    if (current == &other) {
      return true;
    }
    if (current->superiors.size() != 1) {
      break;
    }
    current = current->superiors.front();
  }
  if (current->superiors.empty()) {
    return false;
  }
  // Several superiors: a depth-first walk that visits each class once, so that diamonds in the
  // superior graph (acyclic, as Schema::load checks) cost linear time, and deep graphs no stack.
  std::vector<const ObjectClass*> pending(current->superiors.begin(), current->superiors.end());
  std::vector<const ObjectClass*> visited;
  while (!pending.empty()) {
    const ObjectClass* next = pending.back();
    pending.pop_back();
    if (next == &other) {
      return true;
    }
    if (std::find(visited.begin(), visited.end(), next) != visited.end()) {
      continue;
    }
    visited.push_back(next);
    pending.insert(pending.end(), next->superiors.begin(), next->superiors.end());
  }
  return false;
}

}  // namespace numadir::schema
