// `loom-bench model`: the in-process view of one model's speed, as llama.cpp's llama-bench and
// llama-batched-bench give it: prompt processing (pp N), token generation (tg N), decode
// throughput as the number of parallel sequences grows, and this machine's read bandwidth
// beside tg's effective bandwidth. Drives the ModelExecutor directly: no tokenizer, no sampler,
// no scheduler in the timed region.
#pragma once

namespace loom::bench {

// argv[0] = "model", then the options (`model --help` lists them). Returns the exit status.
int model_main(int argc, char** argv);

}  // namespace loom::bench
