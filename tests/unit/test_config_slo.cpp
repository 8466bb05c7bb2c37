// The [slo] table: every key read, every problem reported with its position and key path,
// check_config applying the same rules to a config built in code, and to_toml round-tripping it.
#include <gtest/gtest.h>

#include "core/common/error.hpp"
#include "core/config/config.hpp"

namespace loom {
namespace {

const std::string kFile = "/etc/loom/slo.toml";

std::string error_of(const std::string& text) {
  try {
    parse_config(text, kFile);
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(ConfigSlo, ReadsEveryKey) {
  const Config c = parse_config(R"([slo]
classes = [{ priority = 0, ttft_ms = 500, tpot_ms = 50 }, { priority = 5, ttft_ms = 10000 }]
admission = true
ttft_factor = 1.5
max_queue_len = 32
max_queued_tokens = 65536
best_effort_priority = 5
goodput_window_s = 30
calibration_steps = 4
)",
                                kFile);
  ASSERT_EQ(c.slo.classes.size(), 2u);
  EXPECT_EQ(c.slo.classes[0], (SloClassConfig{0, 500, 50}));
  EXPECT_EQ(c.slo.classes[1], (SloClassConfig{5, 10000, 0}));
  EXPECT_TRUE(c.slo.admission);
  EXPECT_DOUBLE_EQ(c.slo.ttft_factor, 1.5);
  EXPECT_EQ(c.slo.max_queue_len, 32);
  EXPECT_EQ(c.slo.max_queued_tokens, 65536);
  EXPECT_EQ(c.slo.best_effort_priority, 5);
  EXPECT_EQ(c.slo.goodput_window_s, 30);
  EXPECT_EQ(c.slo.calibration_steps, 4);
  // The table form of the classes reads the same.
  const Config t = parse_config("[[slo.classes]]\npriority = 0\nttft_ms = 500\ntpot_ms = 50\n", kFile);
  EXPECT_EQ(t.slo.classes, (std::vector<SloClassConfig>{{0, 500, 50}}));
  // Off by default.
  EXPECT_FALSE(parse_config("", kFile).slo.admission);
}

TEST(ConfigSlo, EveryProblemAtOnceWithItsKey) {
  EXPECT_EQ(error_of("[slo]\nadmission = 1\nttft_factor = 0\nmax_queue_len = -1\nclasses = [{ ttft_ms = 5 }, "
                     "{ priority = 1, tpot = 3 }]\nwhatever = 2\n"),
            "/etc/loom/slo.toml:2:13: slo.admission: expected a boolean, got an integer\n"
            "/etc/loom/slo.toml:3:15: slo.ttft_factor: must be in (0, 1000], got 0.000000\n"
            "/etc/loom/slo.toml:4:17: slo.max_queue_len: must be >= 0, got -1\n"
            "/etc/loom/slo.toml:5:12: slo.classes[0].priority: required\n"
            "/etc/loom/slo.toml:5:45: slo.classes[1].tpot: unknown key; valid keys: "
            "priority, ttft_ms, tpot_ms\n"
            "/etc/loom/slo.toml:6:1: slo.whatever: unknown key; valid keys: classes, admission, ttft_factor, "
            "max_queue_len, max_queued_tokens, best_effort_priority, goodput_window_s, calibration_steps");
  EXPECT_EQ(error_of("[slo]\nclasses = [{ priority = 1 }, { priority = 1 }]\n"),
            "/etc/loom/slo.toml:2:43: slo.classes[1].priority: priority 1 is listed twice");
}

TEST(ConfigSlo, CheckConfigAppliesTheSameRules) {
  Config c = builtin_config();
  c.model.path = "/m.gguf";
  c.slo.ttft_factor = -1;
  c.slo.classes = {{0, -5, 0}};
  try {
    check_config(c);
    FAIL() << "accepted";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "<config>: slo.classes[0].ttft_ms: must be in 0..86400000, got -5\n"
              "<config>: slo.ttft_factor: must be in (0, 1000], got -1.000000");
  }
}

TEST(ConfigSlo, RoundTripsThroughToToml) {
  Config c = parse_config("[slo]\nclasses = [{ priority = -2, ttft_ms = 100, tpot_ms = 20 }]\nadmission = true\n"
                          "ttft_factor = 1.25\nmax_queued_tokens = 9\n",
                          kFile);
  EXPECT_EQ(parse_config(to_toml(c), kFile), c);
}

}  // namespace
}  // namespace loom
