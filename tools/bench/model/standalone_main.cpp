// loom-bench-model: `loom-bench model` as its own executable (same options).
#include "tools/bench/model/model_bench.hpp"

int main(int argc, char** argv) { return loom::bench::model_main(argc, argv); }
