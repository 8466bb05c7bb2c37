// A shared object that is not a Loom plugin: it exports no loom_plugin_entry_v1.
extern "C" __attribute__((visibility("default"))) int not_a_plugin() { return 42; }
