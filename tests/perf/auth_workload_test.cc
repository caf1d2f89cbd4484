#include "perf/auth_workload.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "listener/wire/ber_writer.h"
#include "listener/wire/message_decoder.h"
#include "listener/wire/message_encoder.h"
#include "perf/auth_worker.h"

namespace numadir::perf {
namespace {

std::string expand(std::string_view text, std::uint64_t number) {
  std::string out;
  expand_template(text, number, out);
  return out;
}

TEST_CASE("expand_template: replaces every %d and unescapes %%") {
  CHECK(expand("(uid=user%d)", 42) == "(uid=user42)");
  CHECK(expand("password%d", 0) == "password0");
  CHECK(expand("%d-%d", 7) == "7-7");
  CHECK(expand("100%% of %d", 18446744073709551615ULL) == "100% of 18446744073709551615");
  CHECK(expand("no placeholder", 1) == "no placeholder");
  CHECK(expand("trailing %", 1) == "trailing %");
  CHECK(expand("%s stays", 1) == "%s stays");
  CHECK(expand("", 1).empty());
}

TEST_CASE("expand_template: appends without reallocating a buffer with room") {
  std::string out;
  out.reserve(64);
  const char* data = out.data();
  expand_template("uid=user%d,ou=people", 123456, out);
  CHECK(out == "uid=user123456,ou=people");
  CHECK(out.data() == data);
}

TEST_CASE("AuthWorkload: builds the filter template for a user") {
  SUBCASE("a single equality") {
    WorkloadOptions options;
    auto workload = AuthWorkload::create(options);
    REQUIRE(workload.ok());
    schema::Filter filter;
    std::vector<std::string> scratch;
    workload->build_filter(17, filter, scratch);
    CHECK(filter.to_string() == "(uid=user17)");
    workload->build_filter(18, filter, scratch);
    CHECK(filter.to_string() == "(uid=user18)");
  }
  SUBCASE("a nested filter with several placeholders") {
    WorkloadOptions options;
    options.filter_template =
        "(&(objectClass=person)(|(uid=user%d)(mail=user%d@example.com))"
        "(!(cn=*x%d*)))";
    auto workload = AuthWorkload::create(std::move(options));
    REQUIRE(workload.ok());
    schema::Filter filter;
    std::vector<std::string> scratch;
    workload->build_filter(5, filter, scratch);
    auto expected = schema::Filter::parse(
        "(&(objectClass=person)(|(uid=user5)(mail=user5@example.com))(!(cn=*x5*)))");
    REQUIRE(expected.ok());
    CHECK(filter == *expected);
  }
}

TEST_CASE("AuthWorkload: passwords and bind DNs from templates or a file") {
  WorkloadOptions options;
  options.first_user = 1;
  options.last_user = 2;
  auto from_template = AuthWorkload::create(options);
  REQUIRE(from_template.ok());
  std::string out;
  from_template->password(2, out);
  CHECK(out == "password2");
  from_template->bind_dn(2, out);
  CHECK(out == "uid=user2,ou=people,dc=example,dc=com");

  options.passwords = {"zero", "one", "two"};
  auto from_file = AuthWorkload::create(options);
  REQUIRE(from_file.ok());
  from_file->password(1, out);
  CHECK(out == "one");

  options.passwords = {"zero", "one"};  // No line for user 2.
  CHECK(AuthWorkload::create(options).status().code() == StatusCode::kInvalidArgument);
}

TEST_CASE("AuthWorkload: a wrong password is the right one with a suffix") {
  WorkloadOptions options;
  auto from_template = AuthWorkload::create(options);
  REQUIRE(from_template.ok());
  std::string out = "left over";
  from_template->wrong_password(7, out);
  CHECK(out == "password7-wrong");
  options.last_user = 1;
  options.passwords = {"zero", "one"};
  auto from_file = AuthWorkload::create(options);
  REQUIRE(from_file.ok());
  from_file->wrong_password(1, out);
  CHECK(out == "one-wrong");
  from_file->password(1, out);
  CHECK(out == "one");
}

TEST_CASE("AuthWorkload: the share of wrong passwords follows wrong_percent") {
  const std::uint64_t seed = 13;
  MESSAGE("seed " << seed);
  SUBCASE("a share between 0 and 100") {
    WorkloadOptions options;
    options.wrong_percent = 10;
    auto workload = AuthWorkload::create(options);
    REQUIRE(workload.ok());
    Rng rng(seed);
    constexpr int kDraws = 100'000;
    int wrong = 0;
    for (int i = 0; i < kDraws; ++i) {
      wrong += workload->pick_wrong_password(rng) ? 1 : 0;
    }
    CHECK(static_cast<double>(wrong) / kDraws == doctest::Approx(0.1).epsilon(0.05));
  }
  SUBCASE("0 and 100 decide without drawing") {
    for (const double percent : {0.0, 100.0}) {
      CAPTURE(percent);
      WorkloadOptions options;
      options.wrong_percent = percent;
      auto workload = AuthWorkload::create(options);
      REQUIRE(workload.ok());
      Rng rng(seed);
      const Rng untouched(seed);
      for (int i = 0; i < 100; ++i) {
        CHECK(workload->pick_wrong_password(rng) == (percent == 100));
      }
      // The users drawn next are those of a run without the option.
      CHECK(rng == untouched);
    }
  }
}

TEST_CASE("AuthWorkload: bad options are errors") {
  WorkloadOptions reversed;
  reversed.first_user = 10;
  reversed.last_user = 9;
  CHECK(AuthWorkload::create(reversed).status().code() == StatusCode::kInvalidArgument);
  WorkloadOptions bad_filter;
  bad_filter.filter_template = "(uid=user%d";
  CHECK(AuthWorkload::create(std::move(bad_filter)).status().code() ==
        StatusCode::kInvalidArgument);
  for (const double percent : {-1.0, 100.5, std::nan("")}) {
    CAPTURE(percent);
    WorkloadOptions bad_share;
    bad_share.wrong_percent = percent;
    const auto refused = AuthWorkload::create(bad_share);
    CHECK(refused.status().code() == StatusCode::kInvalidArgument);
    CHECK(refused.status().message().find("--wrong-percent") != std::string::npos);
  }
}

TEST_CASE("AuthWorkload: a hot set gets its share of the auths") {
  const std::uint64_t seed = 7;
  MESSAGE("seed " << seed);
  Rng rng(seed);
  WorkloadOptions options;
  options.first_user = 1000;
  options.last_user = 1999;
  options.hot = *parse_hot_set("80:10");
  auto workload = AuthWorkload::create(options);
  REQUIRE(workload.ok());
  constexpr int kPicks = 200'000;
  int hot = 0;
  std::vector<int> seen(1000, 0);
  for (int i = 0; i < kPicks; ++i) {
    const std::uint64_t user = workload->pick_user(rng);
    REQUIRE(user >= 1000);
    REQUIRE(user <= 1999);
    ++seen[user - 1000];
    hot += user < 1100 ? 1 : 0;
  }
  CHECK(static_cast<double>(hot) / kPicks == doctest::Approx(0.8).epsilon(0.01));
  // Within each set the draw is uniform: every user is seen, hot ones about 36x as often.
  CHECK(std::count(seen.begin(), seen.end(), 0) == 0);
  CHECK(seen[0] > 10 * seen[500]);
}

TEST_CASE("AuthWorkload: without a hot set the draw is uniform over the range") {
  const std::uint64_t seed = 11;
  MESSAGE("seed " << seed);
  Rng rng(seed);
  WorkloadOptions options;
  options.first_user = 0;
  options.last_user = 9;
  auto workload = AuthWorkload::create(options);
  REQUIRE(workload.ok());
  std::vector<int> seen(10, 0);
  for (int i = 0; i < 100'000; ++i) {
    ++seen[workload->pick_user(rng)];
  }
  for (int count : seen) {
    CHECK(count == doctest::Approx(10'000).epsilon(0.05));
  }
}

TEST_CASE("parse_hot_set: accepts X:Y and rejects the rest") {
  const auto hot = parse_hot_set("90:5.5");
  REQUIRE(hot.ok());
  CHECK(hot->auth_percent == 90);
  CHECK(hot->user_percent == 5.5);
  for (const char* bad : {"", "80", "80:", ":20", "0:20", "80:0", "101:20", "80:20:1", "a:b"}) {
    CAPTURE(bad);
    CHECK(parse_hot_set(bad).status().code() == StatusCode::kInvalidArgument);
  }
}

TEST_CASE("parse_ldap_url: ldap and ldaps URLs only") {
  auto url = parse_ldap_url("ldap://127.0.0.1:3389");
  REQUIRE(url.ok());
  CHECK(url->host == "127.0.0.1");
  CHECK(url->port == 3389);
  url = parse_ldap_url("ldap://ldap.example.com/");
  REQUIRE(url.ok());
  CHECK(url->host == "ldap.example.com");
  CHECK(url->port == 389);
  url = parse_ldap_url("ldap://[::1]:1389");
  REQUIRE(url.ok());
  CHECK(url->host == "::1");
  CHECK(url->port == 1389);
  CHECK_FALSE(url->ldaps);
  url = parse_ldap_url("ldaps://127.0.0.1:3636/");
  REQUIRE(url.ok());
  CHECK(url->ldaps);
  CHECK(url->port == 3636);
  url = parse_ldap_url("ldaps://[::1]");
  REQUIRE(url.ok());
  CHECK(url->ldaps);
  CHECK(url->host == "::1");
  CHECK(url->port == 636);

  CHECK(parse_ldap_url("ldapx://host:636").status().code() == StatusCode::kUnsupported);
  CHECK(parse_ldap_url("ldapi:///run/slapd.sock").status().code() == StatusCode::kUnsupported);
  for (const char* bad : {"host:389", "ldap://", "ldaps://", "ldap://host:", "ldap://host:0",
                          "ldap://host:70000", "ldap://host:12x", "ldap://[::1"}) {
    CAPTURE(bad);
    CHECK(parse_ldap_url(bad).status().code() == StatusCode::kInvalidArgument);
  }
}

TEST_CASE("AuthWorkload: the modify mode's request replaces description of the user's entry") {
  namespace wire = listener::wire;
  WorkloadOptions options;
  options.base = "ou=people,dc=example,dc=com";
  auto workload = AuthWorkload::create(options);
  REQUIRE(workload.ok());
  wire::LdapMessage request;
  std::string dn;
  std::string value;
  workload->build_modify(7, 42, 3, request, dn, value);
  wire::BerWriter encoded;
  wire::encode_message(request, encoded);

  // What the server receives, decoded as the server decodes it.
  wire::LdapMessage decoded;
  REQUIRE(wire::decode_message(encoded.view(), decoded).ok());
  CHECK(decoded.message_id == 7);
  REQUIRE(decoded.op == wire::ProtocolOp::kModifyRequest);
  const wire::ModifyRequest& modify = decoded.modify_request;
  CHECK(modify.object == "uid=user42,ou=people,dc=example,dc=com");
  REQUIRE(modify.operations.size() == 1);
  CHECK(modify.operations[0] == wire::ModifyOperation::kReplace);
  REQUIRE(modify.modifications.size() == 1);
  CHECK(modify.modifications[0].type == "description");
  const auto values = modify.modifications.values(modify.modifications[0]);
  REQUIRE(values.size() == 1);
  CHECK(values[0] == "authrate modify 42 3");

  // The next request (another user, the next serial) reuses the message and the strings.
  workload->build_modify(8, 5, 4, request, dn, value);
  CHECK(request.modify_request.object == "uid=user5,ou=people,dc=example,dc=com");
  REQUIRE(request.modify_request.modifications.size() == 1);
  CHECK(request.modify_request.modifications.values(request.modify_request.modifications[0])[0] ==
        "authrate modify 5 4");

  Result<AuthMode> mode = parse_auth_mode("modify");
  REQUIRE(mode.ok());
  CHECK(*mode == AuthMode::kModify);
  CHECK(auth_mode_name(AuthMode::kModify) == "modify");
}

}  // namespace
}  // namespace numadir::perf
