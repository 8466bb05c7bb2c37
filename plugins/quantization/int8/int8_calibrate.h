/* quantization/int8: SmoothQuant calibration, exported by libloom-quantization-int8.so (look the
 * symbols up with dlsym on the loaded library). Not part of the quantization vtable: only a host
 * that ran a calibration pass (per-input-channel activation maxima) calls these. */
#ifndef LOOM_QUANTIZATION_INT8_CALIBRATE_H
#define LOOM_QUANTIZATION_INT8_CALIBRATE_H

#include "loom/plugin.h"

#ifdef __cplusplus
extern "C" {
#endif

/* s[j] = act_absmax[j]^alpha / w_absmax[j]^(1 - alpha) for j < n (1 where either maximum is 0
 * or not finite): SmoothQuant's migration strength alpha in [0, 1]. */
typedef void (*loom_int8_smoothing_factors_fn)(const float* act_absmax, const float* w_absmax, int64_t n, float alpha,
                                               float* s);
#define LOOM_INT8_SMOOTHING_FACTORS_SYMBOL "loom_quantization_int8_smoothing_factors"

/* Calibrates one prepared weight of an int8 instance in mode "w8a8": act_absmax[j] is max |x_j|
 * over the calibration tokens for each of the weight's in_features input channels. Computes
 * the smoothing factors with the instance's smoothquant_alpha and w_absmax[j] = max_o |W[o][j]|,
 * re-quantizes W diag(s) from the stored weight, and from then on linear() divides x by s. */
typedef loom_status (*loom_int8_calibrate_fn)(void* self, void* handle, const float* act_absmax, int64_t in_features,
                                              loom_error_buf* err);
#define LOOM_INT8_CALIBRATE_SYMBOL "loom_quantization_int8_calibrate"

#ifdef __cplusplus
}
#endif

#endif /* LOOM_QUANTIZATION_INT8_CALIBRATE_H */
