// Command line of `loom-bench serve`, named as `vllm bench serve` names its options (CLI11, the
// shared style of core/common/command_line.hpp). Every mistake is a loom::Error naming the option
// and the value.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tools/bench/request_class.hpp"
#include "tools/bench/serve_metrics.hpp"
#include "tools/bench/workload.hpp"

namespace loom::bench {

struct ServeArgs {
  bool help = false;
  std::string base_url;  // empty: from host and port
  std::string host = "127.0.0.1";
  int port = 8080;
  std::string endpoint = "/v1/completions";
  std::string model;  // empty: the first id of GET /v1/models
  std::string api_key;
  int timeout_s = 600;

  std::string dataset_name = "random";
  std::string dataset_path;
  std::string tokenizer;  // a .gguf; empty: approximate word prompts
  size_t num_prompts = 1000;
  RandomOptions random;
  SharedPrefixOptions shared_prefix;
  MultiTurnOptions multi_turn;
  bool ignore_eos = true;

  double request_rate = 0;  // 0 = inf
  double burstiness = 1.0;
  size_t max_concurrency = 0;  // 0: no limit
  uint64_t seed = 0;
  size_t num_warmups = 0;

  std::vector<RequestClass> classes;  // --class: a mixed load (the dataset is then the classes')
  bool class_fields = true;           // --no-class-fields: do not send priority/slo

  GoodputSlo goodput;
  std::string json_path;
  bool progress = false;  // force the progress bar when stderr is not a terminal
  bool quiet = false;     // no progress bar even on a terminal
};

ServeArgs parse_serve_args(const std::vector<std::string>& args);
std::string serve_usage();  // the --help text

}  // namespace loom::bench
