// server/operations/search_paging.h: the Paged Results control (RFC 2696) of a search: decoding the
// request's control, the cookies, and resuming a paged search where its previous page stopped.
//
// A page that fills up before the search ends is answered with a cookie naming a position saved
// in the connection's ServerSession: the request's signature (every field of the SearchRequest,
// so a cookie is only good for the same search) and how many entries the pages so far returned.
// The next page runs the same search again and skips that many entries before sending. Simple
// and correct while the directory does not change between pages (the backend streams a given
// tree in a stable order); an entry added or removed meanwhile can shift the rest by one, as in
// many servers. Each page costs the entries skipped; fine for the result sizes the server
// limits allow.
//
// Thread contract: functions of their arguments, and a SearchPage that belongs to the one
// search that made it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "listener/wire/ldap_message.h"
#include "server/operations/result_codes.h"
#include "server/operations/result_sender.h"
#include "server/operations/server_session.h"

namespace numadir::server {

// The request's Paged Results control, as views into the request.
struct PagedRequest {
  bool present = false;
  std::int64_t size = 0;
  std::string_view cookie;
};

// Decodes the Paged Results control of `request`, if any, into `paged`.
// Returns: an error result (protocolError) for a malformed control value; nullopt otherwise.
std::optional<OwnedResult> parse_paged(const listener::wire::LdapMessage& request,
                                       PagedRequest& paged);

// Returns: the encoded realSearchControlValue (RFC 2696): size 0 (no estimate) and `cookie`.
std::string paged_response_value(std::string_view cookie);

// Adds the Paged Results response control with `cookie` to the result `sender` sends next.
void add_paged_control(ResultSender& sender, std::string_view cookie);

// Where one paged search stands: what earlier pages returned, and this page's size.
class SearchPage {
 public:
  // Requires: `paged` and the session outlive this object.
  SearchPage(const PagedRequest& paged, ServerSession& session)
      : paged_(paged), session_(session) {}

  // Resumes the search from the request's cookie. Returns: false after sending the result that
  // ends the operation: protocolError for a cookie that is unknown, forgotten or of another
  // search, or the empty last page of RFC 2696 §3 (size 0 abandons the paged search).
  bool resume(const listener::wire::SearchRequest& search, ResultSender& sender);

  bool paged() const { return paged_.present; }
  // Entries earlier pages returned: skipped before this page sends any.
  std::uint64_t skip() const { return skip_; }
  // Returns: true when this page holds `sent` entries and is full.
  bool full(std::uint64_t sent) const {
    return paged_.present && sent >= static_cast<std::uint64_t>(paged_.size);
  }
  // Adds the response control to the SearchResultDone: a cookie for the next page when this
  // one filled up before the search ended (`returned`: entries of every page so far), else the
  // empty cookie of the last page. Nothing when the search is not paged.
  void finish(bool page_full, std::uint64_t returned, ResultSender& sender);

  // What a paused search keeps of its page: restore() puts it on a new SearchPage of the same
  // request (resume() is not run again: the cookie was taken).
  struct Saved {
    std::uint64_t skip = 0;
    std::string signature;
  };
  Saved save() const { return Saved{skip_, signature_}; }
  void restore(Saved saved) {
    skip_ = saved.skip;
    signature_ = std::move(saved.signature);
  }

 private:
  const PagedRequest& paged_;
  ServerSession& session_;
  std::uint64_t skip_ = 0;
  std::string signature_;  // Set by resume() for a paged search.
};

}  // namespace numadir::server
