// release_file_pages: /proc/self/maps says whether a range is a read-only file mapping, the only
// memory MADV_DONTNEED may drop without changing what a later read sees. advise_huge_pages:
// MADV_HUGEPAGE, which changes no contents.
#include "weight_pages.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <cinttypes>
#include <cstdio>

namespace loom_quant {
namespace {

// True when every byte of [begin, end) lies in read-only mappings of a file (inode != 0).
bool read_only_file_mapping(uintptr_t begin, uintptr_t end) {
  std::FILE* maps = std::fopen("/proc/self/maps", "r");
  if (maps == nullptr) return false;
  char line[512];
  uintptr_t covered = begin;  // [begin, covered) is known to qualify
  while (covered < end && std::fgets(line, sizeof(line), maps) != nullptr) {
    uintmax_t lo = 0, hi = 0, offset = 0, inode = 0;
    char perms[8] = {};
    unsigned dev_major = 0, dev_minor = 0;
    if (std::sscanf(line, "%jx-%jx %7s %jx %x:%x %ju", &lo, &hi, perms, &offset, &dev_major, &dev_minor, &inode) != 7)
      continue;
    if (hi <= covered || lo > covered) continue;  // maps is sorted: the next mapping must start at `covered`
    if (perms[1] != '-' || inode == 0) break;
    covered = static_cast<uintptr_t>(hi);
  }
  std::fclose(maps);
  return covered >= end;
}

// The page-aligned interior [begin, end) of [data, data + bytes); begin >= end when none.
void interior(const void* data, int64_t bytes, uintptr_t* begin, uintptr_t* end) {
  *begin = *end = 0;
  const long page_size = sysconf(_SC_PAGESIZE);
  if (page_size <= 0 || bytes <= 0) return;
  const auto page = static_cast<uintptr_t>(page_size);
  const auto start = reinterpret_cast<uintptr_t>(data);
  *begin = (start + page - 1) / page * page;
  *end = (start + static_cast<uintptr_t>(bytes)) / page * page;
}

}  // namespace

void release_file_pages(const void* data, int64_t bytes) {
  uintptr_t begin = 0, end = 0;
  interior(data, bytes, &begin, &end);
  if (end <= begin || !read_only_file_mapping(begin, end)) return;
  (void)madvise(reinterpret_cast<void*>(begin), end - begin, MADV_DONTNEED);
}

void advise_huge_pages(void* data, int64_t bytes) {
  uintptr_t begin = 0, end = 0;
  interior(data, bytes, &begin, &end);
  if (end > begin) (void)madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE);
}

}  // namespace loom_quant
