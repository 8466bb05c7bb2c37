// A plugin-named shared object with an unresolved symbol: RTLD_NOW must refuse it at load time.
extern "C" int loom_test_symbol_nobody_defines(int);
extern "C" __attribute__((visibility("default"))) int uses_missing(int x) {
  return loom_test_symbol_nobody_defines(x);
}
