// parse_config on invalid input: every kind of problem, with its exact file:line:column and key.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "core/common/error.hpp"
#include "core/config/config.hpp"

namespace loom {
namespace {

constexpr const char* kFile = "/etc/loom/bad.toml";

std::string error_of(const std::string& text) {
  try {
    parse_config(text, kFile);
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), LOOM_ERR_CONFIG);
    return e.what();
  }
  return "(no error)";
}

TEST(ConfigErrors, SyntaxErrorHasItsPosition) {
  EXPECT_EQ(error_of("[server]\nport = = 1\n"),
            "/etc/loom/bad.toml:2:8: TOML syntax error: Error while parsing value: could not "
            "determine value type");
}

TEST(ConfigErrors, SyntaxErrorWithoutASourcePathNamesTheText) {
  try {
    parse_config("[server\n", "");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()).rfind("<config>:1:", 0), 0u) << e.what();
  }
}

TEST(ConfigErrors, UnknownKeyInACoreTableListsTheValidOnes) {
  EXPECT_EQ(error_of("[server]\nhost = \"::1\"\nprot = 80\n"),
            "/etc/loom/bad.toml:3:1: server.prot: unknown key (did you mean \"port\"?); valid "
            "keys: host, port, http_threads, max_body_bytes, api_key, metrics_prefix, max_json_depth, "
            "max_json_elements, header_timeout, body_timeout, idle_timeout, write_timeout, max_connections, max_unsent_bytes, "
            "max_response_bytes, drain_timeout, prepare_threads, max_input_tokens, max_total_tokens, max_n, "
            "max_best_of, max_stop_sequences, max_stop_length, max_logprobs, request_timeout, metrics_public, "
            "require_json_content_type, special_tokens_in_chat, special_tokens_in_prompt, cors_allow_origins");
  EXPECT_EQ(error_of("[runtime]\nwhatever = { a = 1 }\n"),
            "/etc/loom/bad.toml:2:1: runtime.whatever: unknown key; valid keys: device, threads, "
            "seed, head_top_k");
  EXPECT_EQ(error_of("[model]\n\"odd key\" = 1\n"),
            "/etc/loom/bad.toml:2:1: model.\"odd key\": unknown key; valid keys: path, name, "
            "max_model_len, chat_template, reasoning_parser, tool_parser, reasoning_start, reasoning_end");
  // The output parsers' names are checked, listing the valid ones.
  EXPECT_EQ(error_of("[model]\ntool_parser = \"qwen\"\n"),
            "/etc/loom/bad.toml:2:15: model.tool_parser: 'qwen' is not one of auto, none, hermes, llama3, mistral");
  EXPECT_EQ(error_of("[plugins]\ndir = []\n"),
            "/etc/loom/bad.toml:2:1: plugins.dir: unknown key (did you mean \"dirs\"?); valid "
            "keys: dirs");
  EXPECT_EQ(error_of("[logging]\nlevel = \"info\"\nfile = \"x.log\"\n"),
            "/etc/loom/bad.toml:3:1: logging.file: unknown key; valid keys: level");
  // A sub-table of a core table is an unknown key too.
  EXPECT_EQ(error_of("[server.tls]\ncert = \"c.pem\"\n"),
            "/etc/loom/bad.toml:1:9: server.tls: unknown key; valid keys: host, port, "
            "http_threads, max_body_bytes, api_key, metrics_prefix, max_json_depth, "
            "max_json_elements, header_timeout, body_timeout, idle_timeout, write_timeout, max_connections, max_unsent_bytes, "
            "max_response_bytes, drain_timeout, prepare_threads, max_input_tokens, max_total_tokens, max_n, "
            "max_best_of, max_stop_sequences, max_stop_length, max_logprobs, request_timeout, metrics_public, "
            "require_json_content_type, special_tokens_in_chat, special_tokens_in_prompt, cors_allow_origins");
}

TEST(ConfigErrors, UnknownTopLevelTableOrKeyListsTheValidTables) {
  const std::string valid =
      "valid tables: model, server, runtime, plugins, logging, slo, attention, quantization, "
      "scheduler, cache, cache_offload, semantic_cache, embedding, speculator";
  EXPECT_EQ(error_of("[sever]\nport = 1\n"),
            "/etc/loom/bad.toml:1:2: sever: unknown table (did you mean \"server\"?); " + valid);
  EXPECT_EQ(error_of("port = 1\n"),
            "/etc/loom/bad.toml:1:1: port: unknown top-level key; " + valid);
  EXPECT_EQ(error_of("[speculative]\nplugin = \"ngram\"\n"),
            "/etc/loom/bad.toml:1:2: speculative: unknown table; " + valid);
}

TEST(ConfigErrors, WrongTypesSayExpectedAndGot) {
  EXPECT_EQ(error_of("[server]\nport = \"8080\"\n"),
            "/etc/loom/bad.toml:2:8: server.port: expected an integer, got a string");
  EXPECT_EQ(error_of("[server]\nhost = 5\n"),
            "/etc/loom/bad.toml:2:8: server.host: expected a string, got an integer");
  EXPECT_EQ(error_of("[server]\nmax_body_bytes = true\n"),
            "/etc/loom/bad.toml:2:18: server.max_body_bytes: expected an integer or a byte-size "
            "string, got a boolean");
  EXPECT_EQ(error_of("[model]\nmax_model_len = 1.5\n"),
            "/etc/loom/bad.toml:2:17: model.max_model_len: expected an integer, got a float");
  EXPECT_EQ(error_of("[runtime]\ndevice = [\"cpu\"]\n"),
            "/etc/loom/bad.toml:2:10: runtime.device: expected a string, got an array");
  EXPECT_EQ(error_of("[logging]\nlevel = 1979-05-27\n"),
            "/etc/loom/bad.toml:2:9: logging.level: expected a string, got a date");
  EXPECT_EQ(error_of("[plugins]\ndirs = \"p\"\n"),
            "/etc/loom/bad.toml:2:8: plugins.dirs: expected an array of strings, got a string");
  EXPECT_EQ(error_of("[plugins]\ndirs = [\"a\", 3]\n"),
            "/etc/loom/bad.toml:2:14: plugins.dirs[1]: expected a string, got an integer");
  EXPECT_EQ(error_of("server = 5\n"),
            "/etc/loom/bad.toml:1:10: server: expected a table, got an integer");
  EXPECT_EQ(error_of("cache = \"paged\"\n"),
            "/etc/loom/bad.toml:1:9: cache: expected a table, got a string");
  EXPECT_EQ(error_of("[scheduler]\nplugin = 5\n"),
            "/etc/loom/bad.toml:2:10: scheduler.plugin: expected a string, got an integer");
  EXPECT_EQ(error_of("[cache]\nplugin = \"paged\"\npath = 1\n"),
            "/etc/loom/bad.toml:3:8: cache.path: expected a string, got an integer");
}

TEST(ConfigErrors, OutOfRangeValues) {
  EXPECT_EQ(error_of("[server]\nport = 65536\n"),
            "/etc/loom/bad.toml:2:8: server.port: must be in 0..65535, got 65536");
  EXPECT_EQ(error_of("[server]\nport = -1\n"),
            "/etc/loom/bad.toml:2:8: server.port: must be in 0..65535, got -1");
  EXPECT_EQ(error_of("[server]\nhttp_threads = 0\n"),
            "/etc/loom/bad.toml:2:16: server.http_threads: must be in 1..256, got 0");
  EXPECT_EQ(error_of("[server]\nhttp_threads = 257\n"),
            "/etc/loom/bad.toml:2:16: server.http_threads: must be in 1..256, got 257");
  EXPECT_EQ(error_of("[server]\nmax_body_bytes = 1023\n"),
            "/etc/loom/bad.toml:2:18: server.max_body_bytes: must be >= 1024, got 1023");
  EXPECT_EQ(error_of("[server]\nmax_body_bytes = \"1KB\"\n"),
            "/etc/loom/bad.toml:2:18: server.max_body_bytes: must be >= 1024, got 1000");
  EXPECT_EQ(error_of("[runtime]\nthreads = -1\n"),
            "/etc/loom/bad.toml:2:11: runtime.threads: must be in 0..1024, got -1");
  EXPECT_EQ(error_of("[runtime]\nthreads = 2147483648\n"),
            "/etc/loom/bad.toml:2:11: runtime.threads: must be in 0..1024, got 2147483648");
  EXPECT_EQ(error_of("[runtime]\nseed = -5\n"),
            "/etc/loom/bad.toml:2:8: runtime.seed: must be >= 0, got -5");
  EXPECT_EQ(error_of("[model]\nmax_model_len = -1\n"),
            "/etc/loom/bad.toml:2:17: model.max_model_len: must be >= 0, got -1");
}

TEST(ConfigErrors, InvalidStrings) {
  EXPECT_EQ(error_of("[runtime]\ndevice = \"gpu\"\n"),
            "/etc/loom/bad.toml:2:10: runtime.device: must be \"cpu\" (the only device that "
            "runs today), got \"gpu\"");
  EXPECT_EQ(error_of("[runtime]\ndevice = \"cuda:x\"\n"),
            "/etc/loom/bad.toml:2:10: runtime.device: must be \"cpu\" (the only device that "
            "runs today), got \"cuda:x\"");
  EXPECT_EQ(error_of("[runtime]\ndevice = \"cuda:\"\n"),
            "/etc/loom/bad.toml:2:10: runtime.device: must be \"cpu\" (the only device that "
            "runs today), got \"cuda:\"");
  EXPECT_EQ(error_of("[logging]\nlevel = \"verbose\"\n"),
            "/etc/loom/bad.toml:2:9: logging.level: must be one of trace, debug, info, warn, "
            "error, off; got \"verbose\"");
  EXPECT_EQ(error_of("[logging]\nlevel = \"INFO\"\n"),
            "/etc/loom/bad.toml:2:9: logging.level: must be one of trace, debug, info, warn, "
            "error, off; got \"INFO\"");
  EXPECT_EQ(error_of("[model]\npath = \"\"\n"),
            "/etc/loom/bad.toml:2:8: model.path: must not be empty");
  EXPECT_EQ(error_of("[server]\nhost = \"\"\n"),
            "/etc/loom/bad.toml:2:8: server.host: must not be empty");
  EXPECT_EQ(error_of("[server]\nmax_body_bytes = \"12XB\"\n"),
            "/etc/loom/bad.toml:2:18: server.max_body_bytes: invalid byte size \"12XB\": unknown "
            "unit \"XB\" (valid: B, KB, MB, GB, TB, KiB, MiB, GiB, TiB) (examples: 4096, "
            "\"64KiB\", \"2GiB\", \"1.5GB\")");
  EXPECT_EQ(error_of("[plugins]\ndirs = [\"\"]\n"),
            "/etc/loom/bad.toml:2:9: plugins.dirs[0]: must not be empty");
}

TEST(ConfigErrors, PluginTables) {
  EXPECT_EQ(error_of("[cache]\nblock_size = 16\n"),
            "/etc/loom/bad.toml:1:1: cache.plugin: required: the name of the cache plugin to load");
  // A table made implicitly by a sub-table still needs its plugin.
  EXPECT_EQ(error_of("[semantic_cache.index]\nkind = \"hnsw\"\n"),
            "/etc/loom/bad.toml:1:1: semantic_cache.plugin: required: the name of the "
            "semantic_cache plugin to load");
  EXPECT_EQ(error_of("[attention]\nplugin = \"../x\"\n"),
            "/etc/loom/bad.toml:2:10: attention.plugin: must be a plugin name of letters, digits, "
            "'_' or '-', got \"../x\"");
  EXPECT_EQ(error_of("[attention]\nplugin = \"\"\n"),
            "/etc/loom/bad.toml:2:10: attention.plugin: must be a plugin name of letters, digits, "
            "'_' or '-', got \"\"");
  EXPECT_EQ(error_of("[cache_offload]\nplugin = \"disk\"\npath = \"\"\n"),
            "/etc/loom/bad.toml:3:8: cache_offload.path: must not be empty");
  EXPECT_EQ(error_of("[cache_offload]\nplugin = \"host\"\nspill = 1\nnext = 3\n"),
            "/etc/loom/bad.toml:3:9: cache_offload.spill: must be true or false\n"
            "/etc/loom/bad.toml:4:8: cache_offload.next: must be a table naming the tier below: plugin = \"disk\", ...");
  EXPECT_EQ(error_of("[cache_offload]\nplugin = \"host\"\n[cache_offload.next]\ndir = \"/x\"\n"),
            "/etc/loom/bad.toml:3:1: cache_offload.next.plugin: required: the name of the cache_offload.next plugin to load");
  EXPECT_EQ(error_of("[scheduler]\nplugin = \"slo\"\n[scheduler.limits]\nx = [1.0, inf]\n"),
            "/etc/loom/bad.toml:4:11: scheduler.limits.x[1]: inf and nan cannot be passed to a "
            "plugin (its config is JSON)");
}

TEST(ConfigErrors, EveryProblemIsReportedAtOnceInSourceOrder) {
  const std::string text =
      "[server]\n"             // 1
      "prot = 80\n"            // 2
      "port = 70000\n"         // 3
      "[runtime]\n"            // 4
      "device = \"gpu\"\n"     // 5
      "threads = -1\n"         // 6
      "[logging]\n"            // 7
      "level = \"verbose\"\n"  // 8
      "[cache]\n"              // 9
      "block_size = 16\n"      // 10
      "[attention]\n"          // 11
      "plugin = \"a.b\"\n"     // 12
      "[sever]\n";             // 13
  EXPECT_EQ(
      error_of(text),
      "/etc/loom/bad.toml:2:1: server.prot: unknown key (did you mean \"port\"?); valid keys: "
      "host, port, http_threads, max_body_bytes, api_key, metrics_prefix, max_json_depth, "
      "max_json_elements, header_timeout, body_timeout, idle_timeout, write_timeout, max_connections, max_unsent_bytes, "
      "max_response_bytes, drain_timeout, prepare_threads, max_input_tokens, max_total_tokens, max_n, "
      "max_best_of, max_stop_sequences, max_stop_length, max_logprobs, request_timeout, metrics_public, "
      "require_json_content_type, special_tokens_in_chat, special_tokens_in_prompt, cors_allow_origins\n"
      "/etc/loom/bad.toml:3:8: server.port: must be in 0..65535, got 70000\n"
      "/etc/loom/bad.toml:5:10: runtime.device: must be \"cpu\" (the only device that runs today), "
      "got \"gpu\"\n"
      "/etc/loom/bad.toml:6:11: runtime.threads: must be in 0..1024, got -1\n"
      "/etc/loom/bad.toml:8:9: logging.level: must be one of trace, debug, info, warn, "
      "error, off; got \"verbose\"\n"
      "/etc/loom/bad.toml:9:1: cache.plugin: required: the name of the cache plugin to load\n"
      "/etc/loom/bad.toml:12:10: attention.plugin: must be a plugin name of letters, digits, "
      "'_' or '-', got \"a.b\"\n"
      "/etc/loom/bad.toml:13:2: sever: unknown table (did you mean \"server\"?); valid "
      "tables: model, server, runtime, plugins, logging, slo, attention, quantization, "
      "scheduler, cache, cache_offload, semantic_cache, embedding, speculator");
}

TEST(ConfigErrors, LoadConfigReportsTheFileItRead) {
  const std::string path = testing::TempDir() + "/loom_config_errors_test.toml";
  {
    std::FILE* f = std::fopen(path.c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fputs("# comment\n[server]\nport = \"x\"\n", f);
    std::fclose(f);
  }
  try {
    load_config(path);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), path + ":3:8: server.port: expected an integer, got a string");
  }
  std::remove(path.c_str());
}

}  // namespace
}  // namespace loom
