// schema/dn.h: the distinguished-name model. Dn::parse reads the RFC 4514 string form,
// Dn::to_string prints it (RFC 4514 §2), and Dn::normalized prints the canonical form used as a
// lookup key (dn2id, entryDN comparison, bind identities).
//
// A Dn is a sequence of RDNs, index 0 the leftmost (most specific) one; each RDN is one or more
// AVAs (attribute type = value). The Dn owns one string holding every type (as written) and
// every value (unescaped); an Ava's string_views point into it. Copies and moves re-point the
// views at the new owner's string, so a Dn is an ordinary copyable value.
//
// Thread contract: a plain value owned by one thread at a time; const methods may be called from
// several threads at once. A DnValueNormalizer passed to normalized() must be safe to call from
// the calling thread (the schema's normalizers are immutable after startup).
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace numadir::schema {

// One attribute value assertion of an RDN. Views stay valid while the Dn they came from lives
// and is not assigned to.
struct Ava {
  std::string_view type;   // As written: a descr ("cn", "CN") or a numericoid ("2.5.4.3").
  std::string_view value;  // Unescaped bytes; for hex_form, the bytes the hex digits encode.
  bool hex_form = false;   // Written as '#' + hex (RFC 4514 §2.4): a BER encoding, kept opaque.

  friend bool operator==(const Ava& a, const Ava& b) = default;
};

struct DnParseLimits {
  std::size_t max_bytes = 8192;  // Length of the string form. Real DNs stay under 1 KiB.
  std::size_t max_rdns = 512;    // Depth of the name; real trees stay under ~20.
};

// How normalized() turns types and values into their canonical forms. The schema's matching
// rules implement this later; until then the defaults below (Dn::normalized(nullptr)) apply.
// Implementations must return valid UTF-8 values, or the normalized string will not parse.
class DnValueNormalizer {
 public:
  virtual ~DnValueNormalizer() = default;

  // Returns: the canonical spelling of attribute type `type` (as written in the DN). Default:
  // a descr lower-cased, a numericoid unchanged.
  virtual std::string normalize_type(std::string_view type) const;

  // Returns: the canonical bytes of `value` (unescaped; never a hex_form value, those are kept
  // as they are). `type` is the result of normalize_type().
  virtual std::string normalize(std::string_view type, std::string_view value) const = 0;

  // Writes normalize_type(type) to `type_out` and normalize(type_out, value) to `value_out`
  // (replacing their contents). An implementation may do both in one step: the schema's looks
  // the type up once instead of twice.
  virtual void normalize_ava(std::string_view type, std::string_view value, std::string& type_out,
                             std::string& value_out) const;

  // Returns: `value` under the default value rule, the one Dn::normalized(nullptr) applies:
  // spaces dropped at both ends and inner runs collapsed to one, ASCII letters lower-cased.
  static std::string default_value(std::string_view value);
};

namespace detail {
class DnParser;
}  // namespace detail

class Dn {
 public:
  Dn() = default;  // The root DN (zero RDNs).
  Dn(const Dn& other);
  Dn& operator=(const Dn& other);
  Dn(Dn&& other) noexcept;  // Leaves `other` the root DN.
  Dn& operator=(Dn&& other) noexcept;
  ~Dn() = default;

  // Parses the RFC 4514 string form, e.g. "uid=jdoe,ou=people,dc=example,dc=com". The empty
  // string (or only spaces) is the root DN. Lenient like OpenLDAP: spaces are accepted around
  // '=', ',' and '+', and unescaped leading and trailing spaces of a value are dropped (an
  // escaped "\ " is kept). The result does not refer to `text`.
  // Errors: kLimitExceeded when `text` is longer than limits.max_bytes or has more than
  // limits.max_rdns RDNs. kMalformed for everything else: a missing '=', an empty or invalid
  // attribute type, a numericoid arc with a leading zero, a bad escape, an odd or non-hex '#'
  // value, an unescaped '"', ';', '<', '>' or NUL, invalid UTF-8 in a string value (checked
  // after escapes are decoded), an empty RDN or AVA. Messages read "DN: offset N: <problem>".
  static Result<Dn> parse(std::string_view text, const DnParseLimits& limits = {});
  // As parse(), into `out`, reusing the capacity of its buffers (a Dn kept per worker thread
  // parses without allocating once warm). Errors: as parse(); `out` is then the root DN.
  static Status parse_into(std::string_view text, Dn& out, const DnParseLimits& limits = {});

  bool is_root() const { return avas_.empty(); }
  std::size_t rdn_count() const { return rdn_starts_.empty() ? avas_.size() : rdn_starts_.size(); }

  // Returns: the AVAs of RDN `index` (0 = leftmost), in the order written; at least one.
  // Requires: index < rdn_count(). The span lives as long as the Ava views do.
  std::span<const Ava> rdn(std::size_t index) const;

  // Returns: the RFC 4514 string form with types as written. In values, '"', '+', ',', ';',
  // '<', '>', '\', a leading '#' or space and a trailing space are escaped with '\'; NUL and
  // bytes that are not part of valid UTF-8 become \XX; hex_form values print as '#' + lower-case
  // hex. parse(to_string()) gives a Dn equal to this one. The root DN prints as "".
  std::string to_string() const;

  // Returns: RDN `index` in the to_string() form, e.g. "cn=John+sn=Doe".
  // Requires: index < rdn_count().
  std::string rdn_string(std::size_t index) const;

  // Returns: this DN without its leftmost RDN; the parent of the root DN is the root DN.
  Dn parent() const;

  // Returns: the canonical form used as a lookup key, itself a valid DN in the to_string()
  // escaping: types through normalizer->normalize_type() (default: descr lower-cased,
  // numericoid unchanged), values through normalizer->normalize() (default: see below), the AVAs
  // of a multi-valued RDN sorted by normalized type, then value, then hex_form; no spaces
  // around separators. hex_form values keep their '#' form in lower-case hex.
  // The default value rule: RFC 4518 insignificant space handling (leading and trailing spaces
  // removed, inner runs of spaces collapsed to one) and ASCII case folding. Non-ASCII UTF-8
  // passes through unchanged for now: full Unicode folding arrives with the schema's matching
  // rules, as a DnValueNormalizer. With the default rules normalization is idempotent:
  // parse(x.normalized())->normalized() == x.normalized().
  // Requires: `normalizer`, if given, outlives the call.
  std::string normalized(const DnValueNormalizer* normalizer = nullptr) const;
  // Appends normalized(normalizer) to `out` (reusing its capacity).
  void append_normalized(std::string& out, const DnValueNormalizer* normalizer = nullptr) const;
  // Appends the normalized form of RDNs [first, end) alone, joined by ','. Each RDN normalizes
  // on its own, so normalized() is the ','-joined forms of every RDN's range of one.
  // Requires: first <= end <= rdn_count().
  void append_normalized_rdns(std::string& out, const DnValueNormalizer* normalizer,
                              std::size_t first, std::size_t end) const;

  // Returns: whether RDNs [first, rdn_count()) of this DN are exactly (as ==) the RDNs of
  //   `other`: `other` is this DN's ancestor `first` levels up, spelled the same way.
  bool ends_with(const Dn& other, std::size_t first) const;

  // Exact equality: the same RDN structure, types spelled the same, the same value bytes and
  // hex_form flags. Compare normalized() strings for LDAP name matching.
  friend bool operator==(const Dn& a, const Dn& b) {
    return a.rdn_starts_ == b.rdn_starts_ && a.avas_ == b.avas_;
  }

 private:
  friend class detail::DnParser;

  // Re-points every Ava view, which points into a string whose data started at `old_base`, at
  // the same offsets in bytes_.
  void rebase(const char* old_base);

  // Every type and value, in order; the Ava views point into it.
  std::string bytes_;
  std::vector<Ava> avas_;
  // Index in avas_ of each RDN's first AVA. Empty when every RDN has exactly one AVA (the
  // common case, which then needs no allocation); otherwise rdn_count() entries.
  std::vector<std::size_t> rdn_starts_;
};

// Returns: the offset of the ',' that ends the first RDN of `text`, a DN's string form that
//   parses (a normalized one, say): the first ',' no '\' escapes (the parser refuses an
//   unescaped '"', so no quoted value hides one); text.size() when it has one RDN or none.
std::size_t first_rdn_separator(std::string_view text);

// Returns: Dn::parse(text, limits)->normalized(), the lookup key for a DN string.
// Errors: those of Dn::parse.
Result<std::string> normalize_dn(std::string_view text, const DnParseLimits& limits = {});

}  // namespace numadir::schema
