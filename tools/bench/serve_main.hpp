// `loom-bench serve`: the load generator for OpenAI-compatible servers.
#pragma once

namespace loom::bench {

// argv[0] is "serve". Returns the exit status: 0 when at least one request succeeded, 1 when
// none did or the run could not start, 2 for a bad command line.
int serve_main(int argc, char** argv);

}  // namespace loom::bench
