#include "mem/ram.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <new>
#include <stdexcept>

namespace ksim {

Ram::Ram(uint64_t base, uint64_t size) : base_(base), size_(size) {
  if (size == 0 || size % kPageSize != 0 || base % kPageSize != 0 || base + size < base)
    throw std::invalid_argument("RAM base and size must be page aligned and non-empty");
  void* p = mmap(nullptr, size, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) throw std::bad_alloc();
  host_ = static_cast<uint8_t*>(p);
  flags_.assign(size >> kPageShift, 0);
}

Ram::~Ram() { munmap(host_, size_); }

std::vector<uint64_t> Ram::resident_pages() const {
  // /proc/self/pagemap has one 64-bit entry per host page: bit 63 "present
  // in RAM", bit 62 "swapped out". A page with neither was never written
  // (it reads as zero). (mincore() alone would miss swapped-out pages.)
  const uint64_t pages = size_ >> kPageShift;
  std::vector<uint64_t> out;
  auto everything = [&] {
    out.clear();
    for (uint64_t p = 0; p < pages; ++p) out.push_back(p);
    return out;
  };
  if (sysconf(_SC_PAGESIZE) != static_cast<long>(kPageSize)) return everything();
  int fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return everything();
  std::vector<uint64_t> entries(pages);
  const off_t offset = static_cast<off_t>(reinterpret_cast<uintptr_t>(host_) / kPageSize * 8);
  size_t done = 0;
  const size_t want = pages * 8;
  while (done < want) {
    ssize_t n = pread(fd, reinterpret_cast<char*>(entries.data()) + done, want - done,
                      offset + static_cast<off_t>(done));
    if (n <= 0) break;
    done += static_cast<size_t>(n);
  }
  close(fd);
  if (done != want) return everything();
  for (uint64_t p = 0; p < pages; ++p)
    if (entries[p] >> 62) out.push_back(p);
  return out;
}

void Ram::clear() {
  // MADV_DONTNEED on a private anonymous mapping gives zero-filled pages on
  // the next touch and frees the old ones.
  if (madvise(host_, size_, MADV_DONTNEED) != 0) std::memset(host_, 0, size_);
}

}  // namespace ksim
