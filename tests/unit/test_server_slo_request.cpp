// The request-class fields: priority, slo {ttft_ms, tpot_ms} and user from the body; the gateway
// headers filling what the body leaves unset; every invalid value a 400 naming its field.
#include <gtest/gtest.h>

#include "core/server/api_error.hpp"
#include "core/server/generation_params.hpp"
#include "core/server/slo_request.hpp"

namespace loom {
namespace {

std::string param_of_error(const Json& body) {
  try {
    parse_slo_fields(body);
  } catch (const ApiError& e) {
    EXPECT_EQ(e.status, 400u);
    return e.param.value_or("(none)");
  }
  return "(no error)";
}

HttpRequest with_headers(std::initializer_list<std::pair<const char*, const char*>> headers) {
  HttpRequest r;
  for (const auto& [name, value] : headers) r.set(name, value);
  return r;
}

TEST(ServerSloRequest, ReadsPrioritySloAndUser) {
  const SloRequestFields f =
      parse_slo_fields(Json::parse(R"({"priority": -3, "slo": {"ttft_ms": 250, "tpot_ms": 40}, "user": "u1"})"));
  EXPECT_EQ(f.priority, -3);
  EXPECT_EQ(f.slo, (SloTargets{250, 40}));
  EXPECT_EQ(f.tenant_id, hash_cache_salt("u1"));
  const SloRequestFields none = parse_slo_fields(Json::parse("{}"));
  EXPECT_EQ(none.priority, 0);
  EXPECT_EQ(none.slo, SloTargets{});
  EXPECT_EQ(none.tenant_id, 0u);
  // Both generation routes read them through their shared parameters.
  EXPECT_EQ(parse_generation_params(Json::parse(R"({"priority": 2})"), true).slo.priority, 2);
  EXPECT_EQ(parse_generation_params(Json::parse(R"({"priority": 2})"), false).slo.priority, 2);
}

TEST(ServerSloRequest, InvalidValuesName400TheirField) {
  EXPECT_EQ(param_of_error(Json::parse(R"({"priority": "high"})")), "priority");
  EXPECT_EQ(param_of_error(Json::parse(R"({"priority": 1.5})")), "priority");
  EXPECT_EQ(param_of_error(Json::parse(R"({"priority": -2147483648})")), "priority");
  EXPECT_EQ(param_of_error(Json::parse(R"({"slo": [1]})")), "slo");
  EXPECT_EQ(param_of_error(Json::parse(R"({"slo": {"ttft_ms": 0}})")), "slo.ttft_ms");
  EXPECT_EQ(param_of_error(Json::parse(R"({"slo": {"tpot_ms": 86400001}})")), "slo.tpot_ms");
  EXPECT_EQ(param_of_error(Json::parse(R"({"slo": {"tpot_ms": "fast"}})")), "slo.tpot_ms");
  EXPECT_EQ(param_of_error(Json::parse(R"({"slo": {"e2e_ms": 5}})")), "slo.e2e_ms");
  EXPECT_EQ(param_of_error(Json::parse(R"({"user": 7})")), "user");
}

TEST(ServerSloRequest, HeadersFillWhatTheBodyLeftUnset) {
  SloRequestFields f = parse_slo_fields(Json::parse(R"({"slo": {"tpot_ms": 40}, "user": "u1"})"));
  apply_slo_headers(with_headers({{"x-slo-ttft-ms", "300"}, {"x-slo-tpot-ms", "99"},
                                  {"x-gateway-inference-fairness-id", "team-a"}}),
                    f);
  EXPECT_EQ(f.slo, (SloTargets{300, 40}));  // the body's tpot wins
  EXPECT_EQ(f.tenant_id, hash_cache_salt("team-a"));  // the gateway's id wins over user
  GenerateRequest r;
  apply_slo_fields(f, r);
  EXPECT_EQ(r.slo, (SloTargets{300, 40}));
  EXPECT_EQ(r.tenant_id, hash_cache_salt("team-a"));
}

TEST(ServerSloRequest, InvalidHeadersName400TheHeader) {
  for (const char* bad : {"", "abc", "-1", "0", "12ms", "86400001", "5 5", "+5"}) {
    SCOPED_TRACE(bad);
    SloRequestFields f;
    try {
      apply_slo_headers(with_headers({{"x-slo-ttft-ms", bad}}), f);
      ADD_FAILURE() << "accepted";
    } catch (const ApiError& e) {
      EXPECT_EQ(e.status, 400u);
      EXPECT_EQ(e.param, "x-slo-ttft-ms");
    }
  }
  SloRequestFields f;
  EXPECT_THROW(apply_slo_headers(with_headers({{"x-gateway-inference-fairness-id", ""}}), f), ApiError);
}

}  // namespace
}  // namespace loom
