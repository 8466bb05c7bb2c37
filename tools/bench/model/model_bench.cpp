#include "tools/bench/model/model_bench.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/common/error.hpp"
#include "tools/bench/model/bench_options.hpp"
#include "tools/bench/model/bench_session.hpp"
#include "loom/sdk_kv_quant.hpp"
#include "tools/bench/model/stream_bandwidth.hpp"

namespace loom::bench {
namespace {

struct Stats {
  double mean = 0.0;
  double stddev = 0.0;  // sample standard deviation; 0 for one sample
};

Stats stats(const std::vector<double>& v) {
  Stats s;
  for (double x : v) s.mean += x;
  s.mean /= static_cast<double>(v.size());
  if (v.size() > 1) {
    double ss = 0.0;
    for (double x : v) ss += (x - s.mean) * (x - s.mean);
    s.stddev = std::sqrt(ss / static_cast<double>(v.size() - 1));
  }
  return s;
}

std::string fmt(const char* format, double a, double b = 0.0) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), format, a, b);
  return buf;
}

struct Samples {
  std::vector<double> ts;  // tokens/s of each run
  double cpu_busy = 0.0;   // CPU seconds / (wall seconds x threads) over all runs
};

// `reps` runs of `run`, which returns the Timing of one run of `tokens` tokens.
template <class Run>
Samples measure(int32_t reps, int64_t tokens, int32_t threads, Run&& run) {
  Samples s;
  Timing all;
  for (int32_t r = 0; r < reps; ++r) {
    const Timing t = run();
    s.ts.push_back(static_cast<double>(tokens) / t.wall);
    all += t;
  }
  s.cpu_busy = all.cpu / (all.wall * threads);
  return s;
}

int run(const ModelBenchOptions& o) {
  int32_t max_tokens = o.batched_prompt + o.batched_steps;
  for (int32_t n : o.pp) max_tokens = std::max(max_tokens, n);
  for (int32_t n : o.tg) max_tokens = std::max(max_tokens, n);
  int32_t max_seqs = 1;
  for (int32_t b : o.batched) max_seqs = std::max(max_seqs, b);
  BenchSession session(
      SessionSpec{o.model, o.threads, o.attention, o.quantization, o.plugin_dirs, max_seqs, max_tokens,
                  sdk::kv::dtype_from_name(o.kv_dtype.c_str()), o.quantization_config});
  const LlamaHparams& hp = session.hparams();

  nlohmann::json out = {{"model", o.model},
                        {"file_bytes", session.file_bytes()},
                        {"decode_bytes", session.decode_bytes()},
                        {"params", session.params()},
                        {"threads", o.threads},
                        {"attention", o.attention},
                        {"quantization", o.quantization},
                        {"quantization_config", nlohmann::json::parse(o.quantization_config, nullptr, false)},
                        {"kv_dtype", o.kv_dtype},
                        {"repetitions", o.repetitions}};
  std::printf("model: %s  (%s layers, dim %d, vocab %d, %.1f M params, %.1f MiB)\n", o.model.c_str(),
              std::to_string(hp.n_layers).c_str(), hp.dim, hp.vocab_size, static_cast<double>(session.params()) / 1e6,
              static_cast<double>(session.file_bytes()) / (1 << 20));
  std::printf("threads %d, attention %s, quantization %s, kv %s, %d repetitions\n", o.threads, o.attention.c_str(),
              o.quantization.c_str(), o.kv_dtype.c_str(), o.repetitions);

  double stream_bps = 0.0;
  if (o.stream) {
    stream_bps = read_bandwidth(session.threads(), int64_t{512} << 20, 5);
    out["stream_read_bytes_per_s"] = stream_bps;
    std::printf("memory read bandwidth (STREAM-style, 512 MiB, best of 5): %.2f GB/s\n", stream_bps / 1e9);
  }

  // Warm-up, as the peer script (and llama-bench) do it: one untimed run of the largest prefill
  // and decode tested, which faults the weights in and grows every scratch buffer to its size.
  int32_t warm_pp = 16, warm_tg = 2;
  for (int32_t n : o.pp) warm_pp = std::max(warm_pp, n);
  for (int32_t n : o.tg) warm_tg = std::max(warm_tg, n);
  session.prefill(std::min(max_tokens, warm_pp));
  session.decode(std::min(max_tokens, warm_tg));

  std::printf("(cpu busy: CPU time the timed steps got / (wall time x threads); below 100%% means other\n"
              " processes or waiting took the rest)\n");
  std::printf("\n| %-8s | %18s | %10s | %8s | %24s |\n", "test", "tokens/s", "ms/token", "cpu busy",
              "effective bandwidth");
  std::printf("|%s|%s|%s|%s|%s|\n", std::string(10, '-').c_str(), std::string(20, '-').c_str(),
              std::string(12, '-').c_str(), std::string(10, '-').c_str(), std::string(26, '-').c_str());
  nlohmann::json tests = nlohmann::json::array();
  auto report = [&](const std::string& name, int64_t n, const Samples& m, bool decode) {
    const Stats s = stats(m.ts);
    std::string bw = "";
    nlohmann::json j = {{"test", name},          {"n_tokens", n},           {"samples_ts", m.ts},
                        {"avg_ts", s.mean},      {"stddev_ts", s.stddev},   {"cpu_busy", m.cpu_busy}};
    if (decode) {
      const double bps = static_cast<double>(session.decode_bytes()) * s.mean;
      j["effective_bytes_per_s"] = bps;
      bw = fmt("%.2f GB/s", bps / 1e9);
      if (stream_bps > 0) bw += fmt(" (%.0f%% of read)", 100.0 * bps / stream_bps);
    }
    std::printf("| %-8s | %9.2f +- %5.2f | %10.2f | %7.0f%% | %24s |\n", name.c_str(), s.mean, s.stddev,
                1000.0 / s.mean, 100.0 * m.cpu_busy, bw.c_str());
    std::fflush(stdout);
    tests.push_back(j);
  };
  for (int32_t n : o.pp) {
    const Samples m = measure(o.repetitions, n, o.threads, [&] { return session.prefill(n); });
    report("pp" + std::to_string(n), n, m, false);
  }
  for (int32_t n : o.tg) {
    const Samples m = measure(o.repetitions, n, o.threads, [&] { return session.decode(n); });
    report("tg" + std::to_string(n), n, m, true);
  }
  out["tests"] = tests;

  if (!o.batched.empty()) {
    std::printf("\nbatched decode: %d-token context per sequence, %d timed steps\n", o.batched_prompt, o.batched_steps);
    std::printf("| %6s | %18s | %10s | %8s | %8s |\n", "seqs", "tokens/s", "ms/step", "cpu busy", "vs 1 seq");
    std::printf("|%s|%s|%s|%s|%s|\n", std::string(8, '-').c_str(), std::string(20, '-').c_str(),
                std::string(12, '-').c_str(), std::string(10, '-').c_str(), std::string(10, '-').c_str());
    nlohmann::json rows = nlohmann::json::array();
    double base = 0.0;
    for (int32_t b : o.batched) {
      const int64_t tokens = static_cast<int64_t>(b) * o.batched_steps;
      const Samples m = measure(o.repetitions, tokens, o.threads,
                                [&] { return session.batched_decode(b, o.batched_prompt, o.batched_steps); });
      const Stats s = stats(m.ts);
      if (b == 1) base = s.mean;
      const std::string speedup = base > 0.0 ? fmt("%.2fx", s.mean / base) : "-";
      std::printf("| %6d | %9.2f +- %5.2f | %10.2f | %7.0f%% | %8s |\n", b, s.mean, s.stddev, 1000.0 * b / s.mean,
                  100.0 * m.cpu_busy, speedup.c_str());
      std::fflush(stdout);
      rows.push_back({{"seqs", b},
                      {"samples_ts", m.ts},
                      {"avg_ts", s.mean},
                      {"stddev_ts", s.stddev},
                      {"cpu_busy", m.cpu_busy}});
    }
    out["batched"] = {{"prompt", o.batched_prompt}, {"steps", o.batched_steps}, {"rows", rows}};
  }

  if (!o.json.empty()) {
    std::ofstream f(o.json);
    if (!f) throw Error("--json: cannot write " + o.json);
    f << out.dump(2) << "\n";
  }
  return 0;
}

}  // namespace

int model_main(int argc, char** argv) {
  try {
    const ModelBenchOptions o = parse_model_bench_options(argc, argv);
    if (o.help) {
      std::cout << model_bench_usage();
      return 0;
    }
    return run(o);
  } catch (const std::exception& e) {
    std::cerr << "loom-bench model: " << e.what() << "\n";
    return 1;
  }
}

}  // namespace loom::bench
