// schema/string_prep.cc: RFC 4518 preparation (see string_prep.h).
#include "schema/string_prep.h"

#include <unicode/uchar.h>
#include <unicode/unorm2.h>
#include <unicode/utf16.h>
#include <unicode/utypes.h>

#include <climits>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "base/check.h"
#include "schema/ascii.h"
#include "schema/utf8.h"

namespace numadir::schema {
namespace {

// Decodes the code point at in[pos] and advances `pos`. Returns false on ill-formed UTF-8.
bool decode_utf8(std::string_view in, std::size_t& pos, char32_t& cp) {
  const std::size_t length = utf8_sequence_length(in.substr(pos));
  if (length == 0) {
    return false;
  }
  // The lead byte keeps 7, 5, 4 or 3 bits; each continuation byte 6.
  static constexpr unsigned char kLeadMask[] = {0, 0x7F, 0x1F, 0x0F, 0x07};
  cp = static_cast<unsigned char>(in[pos]) & kLeadMask[length];
  for (std::size_t i = 1; i < length; ++i) {
    cp = (cp << 6) | (static_cast<unsigned char>(in[pos + i]) & 0x3F);
  }
  pos += length;
  return true;
}

void append_utf8(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

bool in_range(char32_t cp, char32_t first, char32_t last) { return cp >= first && cp <= last; }

// RFC 4518 §2.2: code points mapped to nothing (the complete lists of the RFC, plus U+200B).
// The variation selector range is FE00-FE0F (the RFC's "FF00-FE0F" is a typo).
bool maps_to_nothing(char32_t cp) {
  if (cp < 0x80) {
    return cp <= 0x08 || in_range(cp, 0x0E, 0x1F) || cp == 0x7F;
  }
  return in_range(cp, 0x80, 0x84) || in_range(cp, 0x86, 0x9F) || cp == 0xAD || cp == 0x34F ||
         cp == 0x6DD || cp == 0x70F || cp == 0x1806 || in_range(cp, 0x180B, 0x180E) ||
         in_range(cp, 0x200B, 0x200F) || in_range(cp, 0x202A, 0x202E) ||
         in_range(cp, 0x2060, 0x2063) || in_range(cp, 0x206A, 0x206F) ||
         in_range(cp, 0xFE00, 0xFE0F) || cp == 0xFEFF || in_range(cp, 0xFFF9, 0xFFFC) ||
         in_range(cp, 0x1D173, 0x1D17A) || cp == 0xE0001 || in_range(cp, 0xE0020, 0xE007F);
}

// RFC 4518 §2.2: code points mapped to SPACE (the listed controls and separators).
bool maps_to_space(char32_t cp) {
  return cp == 0x20 || in_range(cp, 0x09, 0x0D) || cp == 0x85 || cp == 0xA0 || cp == 0x1680 ||
         in_range(cp, 0x2000, 0x200A) || cp == 0x2028 || cp == 0x2029 || cp == 0x202F ||
         cp == 0x205F || cp == 0x3000;
}

// RFC 4518 §2.4, checked after mapping (see string_prep.h for why that is equivalent).
bool prohibited(char32_t cp) {
  if (cp == 0xFFFD) {
    return true;
  }
  const std::int8_t type = u_charType(static_cast<UChar32>(cp));
  return type == U_UNASSIGNED || type == U_PRIVATE_USE_CHAR || type == U_SURROGATE;
}

bool is_combining_mark(UChar32 cp) { return (U_GET_GC_MASK(cp) & U_GC_M_MASK) != 0; }

// RFC 4518 §2.6.3's hyphens (the compatibility ones are folded to U+002D / U+2010 by NFKC, but
// listing them costs nothing).
bool is_hyphen(UChar32 cp) {
  return cp == 0x2D || cp == 0x58A || cp == 0x2010 || cp == 0x2011 || cp == 0x2212 ||
         cp == 0xFE63 || cp == 0xFF0D;
}

// Writes prepared characters to `out`, applying §2.6's insignificant space handling in the
// form options.target asks for. Call space() for each insignificant space, text_begin() before
// the bytes of each other character, and finish() once at the end.
class SpaceWriter {
 public:
  SpaceWriter(const PrepOptions& options, std::string& out)
      : target_(options.target),
        keep_spaces_(options.insignificant == PrepInsignificant::kSpace),
        out_(out) {}

  void space() { pending_ = true; }

  void text_begin() {
    if (!keep_spaces_) {
      return;
    }
    if (!seen_text_) {
      // Values in the substring form and initial pieces always start with one SPACE; any and
      // final pieces only when they started with spaces; equality values never.
      if (target_ == PrepTarget::kSubstringValue || target_ == PrepTarget::kInitial ||
          (pending_ && target_ != PrepTarget::kValue)) {
        out_ += ' ';
      }
      seen_text_ = true;
    } else if (pending_) {
      out_.append(target_ == PrepTarget::kValue ? 1 : 2, ' ');
    }
    pending_ = false;
  }

  void text(char c) {
    text_begin();
    out_ += c;
  }

  void finish() {
    if (!keep_spaces_) {
      return;
    }
    if (!seen_text_) {
      out_.assign(target_ == PrepTarget::kSubstringValue ? 2 : 1, ' ');
      return;
    }
    switch (target_) {
      case PrepTarget::kValue:
        break;
      case PrepTarget::kSubstringValue:
      case PrepTarget::kFinal:
        out_ += ' ';
        break;
      case PrepTarget::kInitial:
      case PrepTarget::kAny:
        if (pending_) {
          out_ += ' ';
        }
        break;
    }
  }

 private:
  const PrepTarget target_;
  const bool keep_spaces_;  // false: numeric and telephone handling drop every space.
  bool seen_text_ = false;
  bool pending_ = false;  // Spaces seen since the last character.
  std::string& out_;
};

// The whole of RFC 4518 for ASCII input: NFKC and full case folding are the identity on ASCII
// but for A-Z, and no ASCII character is prohibited.
void prepare_ascii(std::string_view in, const PrepOptions& options, std::string& out) {
  if (options.target == PrepTarget::kValue && options.insignificant == PrepInsignificant::kSpace) {
    // The hot case (equality values, DN values) written straight into place: what the loop
    // below gives for it, without a capacity check per character. The output is never longer
    // than the input (each space written stands for at least one space read).
    out.resize(in.size());
    char* const begin = out.data();
    char* write = begin;
    bool pending = false;  // Spaces after text and before more text.
    for (unsigned char c : in) {
      if (c == ' ' || in_range(c, 0x09, 0x0D)) {
        pending = write != begin;
      } else if (c >= 0x20 && c != 0x7F) {
        if (pending) {
          *write++ = ' ';
          pending = false;
        }
        *write++ = options.case_fold ? ascii_lower(static_cast<char>(c)) : static_cast<char>(c);
      }
    }
    if (write == begin) {
      out.assign(1, ' ');  // Nothing but spaces: one space (§2.6.1).
    } else {
      out.resize(static_cast<std::size_t>(write - begin));
    }
    return;
  }
  SpaceWriter writer(options, out);
  for (unsigned char c : in) {
    if (c == ' ' || in_range(c, 0x09, 0x0D)) {
      writer.space();
    } else if (c < 0x20 || c == 0x7F) {
      continue;  // Mapped to nothing.
    } else if (c == '-' && options.insignificant == PrepInsignificant::kTelephone) {
      continue;
    } else {
      writer.text(options.case_fold ? ascii_lower(static_cast<char>(c)) : static_cast<char>(c));
    }
  }
  writer.finish();
}

const UNormalizer2* icu_normalizer(bool case_fold) {
  static const UNormalizer2* const nfkc = [] {
    UErrorCode status = U_ZERO_ERROR;
    const UNormalizer2* n = unorm2_getNFKCInstance(&status);
    NUMADIR_CHECK(U_SUCCESS(status) && n != nullptr, "ICU NFKC data is missing");
    return n;
  }();
  static const UNormalizer2* const nfkc_cf = [] {
    UErrorCode status = U_ZERO_ERROR;
    const UNormalizer2* n = unorm2_getNFKCCasefoldInstance(&status);
    NUMADIR_CHECK(U_SUCCESS(status) && n != nullptr, "ICU NFKC_Casefold data is missing");
    return n;
  }();
  return case_fold ? nfkc_cf : nfkc;
}

// Runs ICU normalizer `n` over `src` into `dst`. Returns false if ICU fails.
bool icu_normalize(const UNormalizer2* n, const std::u16string& src, std::u16string& dst) {
  if (src.size() > INT32_MAX / 4) {
    return false;
  }
  const auto src_length = static_cast<std::int32_t>(src.size());
  dst.resize(src.size() + src.size() / 2 + 8);
  UErrorCode status = U_ZERO_ERROR;
  std::int32_t length = unorm2_normalize(n, src.data(), src_length, dst.data(),
                                         static_cast<std::int32_t>(dst.size()), &status);
  if (status == U_BUFFER_OVERFLOW_ERROR) {
    status = U_ZERO_ERROR;
    dst.resize(static_cast<std::size_t>(length));
    length = unorm2_normalize(n, src.data(), src_length, dst.data(), length, &status);
  }
  if (U_FAILURE(status)) {
    return false;
  }
  dst.resize(static_cast<std::size_t>(length));
  return true;
}

bool prepare_unicode(std::string_view in, const PrepOptions& options, std::string& out) {
  // Transcode, map and prohibit into UTF-16 for ICU.
  std::u16string mapped;
  mapped.reserve(in.size());
  for (std::size_t pos = 0; pos < in.size();) {
    char32_t cp = 0;
    if (!decode_utf8(in, pos, cp)) {
      return false;
    }
    if (maps_to_nothing(cp)) {
      continue;
    }
    if (maps_to_space(cp)) {
      cp = U' ';
    } else if (prohibited(cp)) {
      return false;
    }
    if (cp < 0x10000) {
      mapped += static_cast<char16_t>(cp);
    } else {
      mapped += static_cast<char16_t>(U16_LEAD(cp));
      mapped += static_cast<char16_t>(U16_TRAIL(cp));
    }
  }
  // Case folding (when asked) and NFKC in one ICU pass.
  std::u16string normalized;
  if (!icu_normalize(icu_normalizer(options.case_fold), mapped, normalized)) {
    return false;
  }
  // Insignificant character handling, writing UTF-8.
  SpaceWriter writer(options, out);
  const char16_t* s = normalized.data();
  const auto length = static_cast<std::int32_t>(normalized.size());
  for (std::int32_t i = 0; i < length;) {
    UChar32 cp = 0;
    U16_NEXT(s, i, length, cp);
    const bool space = cp == 0x20;
    if (space || (options.insignificant == PrepInsignificant::kTelephone && is_hyphen(cp))) {
      UChar32 next = 0;
      std::int32_t j = i;
      if (j < length) {
        U16_NEXT(s, j, length, next);
      }
      if (j == i || !is_combining_mark(next)) {
        if (space) {
          writer.space();
        }
        continue;  // An insignificant hyphen (telephone handling) is dropped.
      }
    }
    writer.text_begin();
    append_utf8(out, static_cast<char32_t>(cp));
  }
  writer.finish();
  return true;
}

}  // namespace

bool prepare(std::string_view in, const PrepOptions& options, std::string& out) {
  out.clear();
  if (is_ascii(in)) {
    out.reserve(in.size() + 2);
    prepare_ascii(in, options, out);
    return true;
  }
  return prepare_unicode(in, options, out);
}

}  // namespace numadir::schema
