// The quantization skeleton: f32 weights kept as stored, y = x @ W^T in double precision sums.
#include "tools/plugin/skeleton.hpp"

namespace loom::tools {

SkeletonKind quantization_skeleton() {
  SkeletonKind k;
  k.class_header = R"skel(
#include "loom/sdk_quant_reading.hpp"  // loom::sdk::Reading, for reads()

// Consumes f32 weights as stored (the view into the model file outlives the handle) and computes
// y = x @ W^T. Replace with your format: convert in prepare_weight, multiply in linear.
class @CLASS@ {
 public:
  @CLASS@(const loom::sdk::Host&, const loom_quantization_create_args& args, std::string_view config) {
    @IDENT@_plugin::refuse_config_keys(config);
    if (args.device.type != LOOM_DEVICE_CPU)
      throw loom::sdk::Error(LOOM_ERR_UNSUPPORTED, "quantization @NAME@: runs on the CPU only");
  }

  loom_status supports(loom_dtype dtype, int32_t* ok) {
    *ok = dtype == LOOM_DTYPE_F32 ? 1 : 0;
    return LOOM_OK;
  }

  // The formats this plugin claims (interface 1.3): `plugin = "auto"` picks the plugin that reads
  // every weight type of a model file best. A plain file's f32 weights are read as stored here on
  // a general path; say native() for the format your kernels are made for.
  loom::sdk::Reading reads(std::string_view format, loom_dtype dtype) const {
    if (format.empty() && dtype == LOOM_DTYPE_F32) return loom::sdk::Reading::as_stored();
    return loom::sdk::Reading::cannot("quantization @NAME@: reads f32 weights of plain files only");
  }

  loom_status prepare_weight(const loom_tensor_view* weight, void** handle) {
    if (weight->dtype != LOOM_DTYPE_F32 || weight->ndim != 2 || weight->strides[1] != 1)
      throw loom::sdk::Error(LOOM_ERR_UNSUPPORTED, "quantization @NAME@: only 2-D f32 weights with contiguous rows");
    *handle = new loom_tensor_view(*weight);  // [out_features, in_features]
    return LOOM_OK;
  }

  loom_status linear(void* handle, const loom_tensor_view* x, loom_tensor_view* y) {
    const auto& w = *static_cast<const loom_tensor_view*>(handle);
    const int64_t n_tokens = x->shape[0], out_features = w.shape[0], in_features = w.shape[1];
    if (x->shape[1] != in_features || y->shape[0] != n_tokens || y->shape[1] != out_features)
      throw loom::sdk::Error(LOOM_ERR_INVALID_ARGUMENT, "quantization @NAME@: linear shapes do not match the weight");
    const float* wd = static_cast<const float*>(w.data);
    for (int64_t t = 0; t < n_tokens; ++t) {
      const float* xr = static_cast<const float*>(x->data) + t * x->strides[0];  // [in_features]
      float* yr = static_cast<float*>(y->data) + t * y->strides[0];              // [out_features]
      for (int64_t o = 0; o < out_features; ++o) {
        double acc = 0;
        for (int64_t i = 0; i < in_features; ++i) acc += double(xr[i]) * wd[o * w.strides[0] + i];
        yr[o] = float(acc);
      }
    }
    return LOOM_OK;
  }

  void release_weight(void* handle) { delete static_cast<loom_tensor_view*>(handle); }
};
)skel";
  k.test_body = R"skel(    loom_quantization_create_args args{};
    args.struct_size = sizeof(args);
    args.device = loom_device{LOOM_DEVICE_CPU, 0};
    @CLASS@ plugin(host, args, "{}");
    int32_t ok = -1;
    check(plugin.supports(LOOM_DTYPE_F32, &ok) == LOOM_OK && ok == 1, "f32 weights are supported");
    check(plugin.supports(LOOM_DTYPE_Q4_0, &ok) == LOOM_OK && ok == 0, "q4_0 weights are not");
    check(plugin.reads("", LOOM_DTYPE_F32).how == LOOM_QUANT_READS_AS_STORED, "f32 is read as stored");
    check(plugin.reads("int8", LOOM_DTYPE_I8).how == LOOM_QUANT_CANNOT_READ, "another format is not claimed");
    float wd[2 * 3] = {1, 2, 3, -1, 0, 4};  // W: [2, 3]
    float xd[2 * 3] = {1, 1, 1, 2, 0, 1};   // x: [2, 3]
    float yd[2 * 2] = {0, 0, 0, 0};         // y: [2, 2]
    loom_tensor_view w{wd, LOOM_DTYPE_F32, 2, {2, 3, 1, 1}, {3, 1, 1, 1}, {LOOM_DEVICE_CPU, 0}};
    loom_tensor_view x{xd, LOOM_DTYPE_F32, 2, {2, 3, 1, 1}, {3, 1, 1, 1}, {LOOM_DEVICE_CPU, 0}};
    loom_tensor_view y{yd, LOOM_DTYPE_F32, 2, {2, 2, 1, 1}, {2, 1, 1, 1}, {LOOM_DEVICE_CPU, 0}};
    void* handle = nullptr;
    check(plugin.prepare_weight(&w, &handle) == LOOM_OK && handle != nullptr, "prepare_weight gives a handle");
    check(plugin.linear(handle, &x, &y) == LOOM_OK, "linear returns LOOM_OK");
    check(yd[0] == 6 && yd[1] == 3 && yd[2] == 5 && yd[3] == 2, "y = x @ W^T exactly");
    plugin.release_weight(handle);)skel";
  return k;
}

}  // namespace loom::tools
