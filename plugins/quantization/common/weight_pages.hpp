// Page-level memory hints for weights: giving back the pages of a weight the plugin no longer
// reads, and asking for huge pages for the repacked copy.
#pragma once

#include <cstdint>

namespace loom_quant {

// Drops this process's pages of [data, data + bytes) (the page-aligned interior) when the whole
// range lies in read-only file mappings, e.g. the mmap'ed model file once its weight is repacked:
// resident memory then holds the repacked copy only, and a later read would fault the bytes back
// in from the file unchanged. Anything else (heap, writable or anonymous memory, whose contents
// MADV_DONTNEED would discard) is left alone. A hint: failures are ignored.
void release_file_pages(const void* data, int64_t bytes);

// Asks for transparent huge pages over the page-aligned interior of [data, data + bytes), before
// it is first written: a repacked weight is then faulted in 2 MiB at a time (fewer faults at
// load, fewer TLB misses while the GEMM streams it). A hint: failures are ignored.
void advise_huge_pages(void* data, int64_t bytes);

}  // namespace loom_quant
