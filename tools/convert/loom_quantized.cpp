#include "tools/convert/loom_quantized.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <optional>
#include <thread>

#include "core/common/error.hpp"
#include "plugins/quantization/common/quant_plugin.hpp"
#include "plugins/quantization/fp8/fp8_format.hpp"
#include "plugins/quantization/int4/int4_format.hpp"
#include "plugins/quantization/int8/int8_format.hpp"
#include "tools/convert/weight_quantizer.hpp"

namespace loom::convert {
namespace {

bool is_plain(loom_dtype t) { return t == LOOM_DTYPE_F32 || t == LOOM_DTYPE_F16 || t == LOOM_DTYPE_BF16; }

// Runs fn(row_begin, row_end) over [0, rows) on all cores: rows are independent.
template <class Fn>
void parallel_rows(int64_t rows, Fn&& fn) {
  const int64_t n = std::clamp<int64_t>(std::thread::hardware_concurrency(), 1, std::max<int64_t>(rows / 64, 1));
  std::vector<std::thread> workers;
  for (int64_t i = 1; i < n; ++i) workers.emplace_back([&, i] { fn(rows * i / n, rows * (i + 1) / n); });
  fn(0, rows / n);
  for (std::thread& t : workers) t.join();
}

template <class T>
std::vector<uint8_t> bytes_of(const std::vector<T>& v) {
  std::vector<uint8_t> b(v.size() * sizeof(T));
  if (!b.empty()) std::memcpy(b.data(), v.data(), b.size());
  return b;
}

// The companions of one matrix, quantized on first use (when N is written) and dropped after
// the last companion is written, so only one matrix's result is held at a time.
struct PendingMatrix {
  const GgufTensorInfo* src;
  LoomQuantOptions opt;
  std::optional<LoomQuantized> result;
  const LoomQuantized& get() {
    if (!result) result = quantize_matrix(*src, opt);
    return *result;
  }
};

// s for one matrix, as the int8 plugin's calibrate() computes it: w_absmax[j] = max_o |W[o][j]|.
std::vector<float> smoothing_factors(const GgufTensorInfo& t, const loom_quant::StoredWeight& src,
                                     const LoomQuantOptions& o) {
  const auto it = o.act_absmax->find(t.name);
  if (it == o.act_absmax->end() || static_cast<int64_t>(it->second.size()) != src.in)
    throw Error("--smoothquant: no calibration maxima of " + std::to_string(src.in) + " input channels for " + t.name);
  std::vector<float> w_absmax(static_cast<size_t>(src.in), 0.0f), row(static_cast<size_t>(src.in));
  for (int64_t i = 0; i < src.out; ++i) {
    loom_quant::read_row(src, i, row.data());
    for (int64_t j = 0; j < src.in; ++j)
      w_absmax[static_cast<size_t>(j)] = std::max(w_absmax[static_cast<size_t>(j)], std::fabs(row[static_cast<size_t>(j)]));
  }
  std::vector<float> s(static_cast<size_t>(src.in));
  loom_int8::smoothing_factors(it->second.data(), w_absmax.data(), src.in, o.alpha, s.data());
  return s;
}

}  // namespace

std::string loom_quant_format_key(const std::string& name) { return name == "fp8" ? "fp8_e4m3" : name; }

bool is_layer_matrix(const std::string& name) {
  if (name.rfind("blk.", 0) != 0) return false;
  const size_t dot = name.find('.', 4);
  if (dot == std::string::npos || dot == 4) return false;
  for (size_t i = 4; i < dot; ++i)
    if (name[i] < '0' || name[i] > '9') return false;
  const std::string rest = name.substr(dot + 1);
  for (const char* m : {"attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up", "ffn_down"})
    if (rest == std::string(m) + ".weight") return true;
  return false;
}

LoomQuantized quantize_matrix(const GgufTensorInfo& t, const LoomQuantOptions& o) {
  if (t.dims.size() != 2 || !is_plain(t.dtype))
    throw Error("--quantize " + o.format + ": tensor " + t.name + " is " + dtype_name(t.dtype) + " with " +
                std::to_string(t.dims.size()) + " dims; only 2-D f32, f16 or bf16 matrices can be quantized");
  const int64_t in = t.dims[0], out = t.dims[1];
  // Rows read exactly as the plugins read them at load.
  const loom_quant::StoredWeight src{t.dtype, out, in, in, t.data};
  LoomQuantized r;
  if (o.format == "int8" || o.format == "fp8") {
    r.dtype = LOOM_DTYPE_I8;
    r.dims = {in, out};
    r.data.resize(static_cast<size_t>(out * in));
    r.scale.resize(static_cast<size_t>(out));
    if (o.act_absmax != nullptr) r.smooth = smoothing_factors(t, src, o);
    const float* smooth = r.smooth.empty() ? nullptr : r.smooth.data();
    parallel_rows(out, [&](int64_t begin, int64_t end) {
      std::vector<float> row(static_cast<size_t>(in));
      for (int64_t i = begin; i < end; ++i) {
        loom_quant::read_row(src, i, row.data());
        uint8_t* q = r.data.data() + i * in;
        float* s = &r.scale[static_cast<size_t>(i)];
        if (o.format == "int8")
          loom_int8::quantize_row(row.data(), smooth, in, reinterpret_cast<int8_t*>(q), s);
        else
          loom_fp8::quantize_row(row.data(), in, q, s);
      }
    });
    return r;
  }
  if (o.format != "int4") throw Error("--quantize: '" + o.format + "' is not one of int8, int4, fp8");
  if (o.group_size != 32 && o.group_size != 64 && o.group_size != 128)
    throw Error("--group-size " + std::to_string(o.group_size) + " is not 32, 64 or 128");
  // Int4Weight's own layout and row quantizer: groups of group_size from k = 0, the last one
  // short when in is not a multiple (the demo model's ffn_down, in = 172).
  loom_int4::Int4Weight w;
  w.out = out;
  w.in = in;
  w.group = o.group_size;
  w.words_per_row = (in + 7) / 8;
  w.n_groups = (in + o.group_size - 1) / o.group_size;
  w.packed.assign(static_cast<size_t>(out * w.words_per_row), 0);
  w.scale.assign(static_cast<size_t>(out * w.n_groups), 0.0f);
  w.zero.assign(static_cast<size_t>(out * w.n_groups), 0);
  parallel_rows(out, [&](int64_t begin, int64_t end) {
    std::vector<float> row(static_cast<size_t>(in));
    for (int64_t i = begin; i < end; ++i) {
      loom_quant::read_row(src, i, row.data());
      loom_int4::quantize_row(row.data(), o.zero_point, w, i);
    }
  });
  r.dtype = LOOM_DTYPE_I32;
  r.dims = {w.words_per_row, out};
  r.data = bytes_of(w.packed);
  r.scale = std::move(w.scale);
  r.n_groups = w.n_groups;
  if (o.zero_point) r.zero = std::move(w.zero);
  return r;
}

GgufWriter loom_quantize_gguf(const GgufFile& in, const LoomQuantOptions& o, std::vector<std::string>* notes) {
  if (!is_loom_quant_format(o.format)) throw Error("--quantize: '" + o.format + "' is not one of int8, int4, fp8");
  if (o.act_absmax != nullptr && o.format != "int8") throw Error("--smoothquant needs --quantize int8");
  GgufWriter w(in.alignment());
  for (const auto& [key, value] : in.metadata()) {
    if (key == "general.alignment" || key.rfind("loom.quantization.", 0) == 0) continue;
    w.set(key, value);
  }
  w.set_string("loom.quantization.format", loom_quant_format_key(o.format));
  if (o.act_absmax != nullptr) w.set_f32("loom.quantization.smoothquant_alpha", o.alpha);
  if (o.format == "int4") {
    w.set_u32("loom.quantization.group_size", static_cast<uint32_t>(o.group_size));
    w.set_bool("loom.quantization.zero_point", o.zero_point);
  }
  for (const GgufTensorInfo& t : in.tensors()) {
    const GgufTensorInfo* src = &t;
    if (!is_layer_matrix(t.name)) {
      if (notes != nullptr && t.dims.size() == 2)
        notes->push_back(t.name + ": kept " + dtype_name(t.dtype) + " (only the per-layer matrices are quantized)");
      const auto* p = static_cast<const uint8_t*>(t.data);
      w.add_tensor(t.name, t.dtype, t.dims, [src, p](GgufTensorSink& sink) { sink.write(p, src->nbytes); });
      continue;
    }
    if (t.dims.size() != 2 || !is_plain(t.dtype))
      throw Error("--quantize " + o.format + ": tensor " + t.name + " is " + dtype_name(t.dtype) +
                  "; the source matrices must be f32, f16 or bf16");
    const int64_t in_f = t.dims[0], out = t.dims[1];
    auto pending = std::make_shared<PendingMatrix>(PendingMatrix{src, o, std::nullopt});
    const bool int4 = o.format == "int4";
    const std::vector<int64_t> dims = int4 ? std::vector<int64_t>{(in_f + 7) / 8, out} : std::vector<int64_t>{in_f, out};
    w.add_tensor(t.name, int4 ? LOOM_DTYPE_I32 : LOOM_DTYPE_I8, dims, [pending](GgufTensorSink& sink) {
      const LoomQuantized& q = pending->get();
      sink.write(q.data.data(), q.data.size());
    });
    const bool zero = int4 && o.zero_point;
    const int64_t n_groups = int4 ? (in_f + o.group_size - 1) / o.group_size : 1;
    w.add_tensor(t.name + ".scale", LOOM_DTYPE_F32, int4 ? std::vector<int64_t>{n_groups, out} : std::vector<int64_t>{out},
                 [pending, last = !zero && o.act_absmax == nullptr](GgufTensorSink& sink) {
                   const LoomQuantized& q = pending->get();
                   sink.write(q.scale.data(), q.scale.size() * sizeof(float));
                   if (last) pending->result.reset();
                 });
    if (o.act_absmax != nullptr)
      w.add_tensor(t.name + ".smooth", LOOM_DTYPE_F32, {in_f}, [pending](GgufTensorSink& sink) {
        const LoomQuantized& q = pending->get();
        sink.write(q.smooth.data(), q.smooth.size() * sizeof(float));
        pending->result.reset();
      });
    if (zero)
      w.add_tensor(t.name + ".zero", LOOM_DTYPE_I8, {n_groups, out}, [pending](GgufTensorSink& sink) {
        const LoomQuantized& q = pending->get();
        sink.write(q.zero.data(), q.zero.size());
        pending->result.reset();
      });
  }
  return w;
}

}  // namespace loom::convert
