// libFuzzer target for the LDAPMessage decoder and the PDU framer.
// Properties checked beyond "no crash, no sanitizer report":
//   - frame_pdu never claims more bytes than it was given;
//   - a PDU that decodes encodes to bytes that decode to an equal message, and encoding that
//     message again gives the same bytes (the encoder's output is canonical).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "listener/wire/ber_writer.h"
#include "listener/wire/framing.h"
#include "listener/wire/ldap_message.h"
#include "listener/wire/message_decoder.h"
#include "listener/wire/message_encoder.h"

using numadir::listener::wire::BerWriter;
using numadir::listener::wire::decode_message;
using numadir::listener::wire::encode_message;
using numadir::listener::wire::Frame;
using numadir::listener::wire::frame_pdu;
using numadir::listener::wire::FrameState;
using numadir::listener::wire::LdapMessage;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const Frame frame = frame_pdu(input, 1 << 20);
  if (frame.state == FrameState::kComplete && frame.pdu_bytes > size) {
    __builtin_trap();
  }

  static LdapMessage message;  // Reused, as the listener reuses its messages.
  if (!decode_message(input, message).ok()) {
    return 0;
  }
  if (frame.state != FrameState::kComplete || frame.pdu_bytes != size) {
    __builtin_trap();  // The decoder accepted what the framer would not have framed.
  }
  static BerWriter first;
  first.clear();
  encode_message(message, first);

  static LdapMessage again;
  if (!decode_message(first.view(), again).ok() || !(again == message)) {
    __builtin_trap();
  }
  static BerWriter second;
  second.clear();
  encode_message(again, second);
  if (second.view() != first.view()) {
    __builtin_trap();
  }
  return 0;
}
