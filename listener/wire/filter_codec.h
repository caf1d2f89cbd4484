// listener/wire/filter_codec.h: the BER form of a search filter (RFC 4511 §4.5.1.7) to and from
// the schema::Filter model.
//
// Thread contract: functions of their arguments; the caller owns the reader/writer and filter.
#pragma once

#include "listener/wire/ber_reader.h"
#include "listener/wire/ber_writer.h"
#include "schema/filter.h"

namespace numadir::listener::wire {

// Reads the next element of `reader` as a Filter and appends its nodes to `filter` (which the
// caller normally cleared). Node strings are views into the reader's buffer. Nesting is bounded
// by the reader's depth budget.
// Returns: false on malformed input, with the error recorded in the reader's BerError.
bool decode_filter(BerReader& reader, schema::Filter& filter);

// Appends the BER encoding of `filter` (which must be complete and non-empty) to `writer`.
void encode_filter(const schema::Filter& filter, BerWriter& writer);

}  // namespace numadir::listener::wire
