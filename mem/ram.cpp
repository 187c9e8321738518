#include "mem/ram.hpp"

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
  const uint64_t pages = size_ >> kPageShift;
  std::vector<uint64_t> out;
  const long host_page = sysconf(_SC_PAGESIZE);
  if (host_page != static_cast<long>(kPageSize)) {  // unusual host: report every page
    for (uint64_t p = 0; p < pages; ++p) out.push_back(p);
    return out;
  }
  std::vector<unsigned char> vec(pages);
  if (mincore(host_, size_, vec.data()) != 0) {
    for (uint64_t p = 0; p < pages; ++p) out.push_back(p);
    return out;
  }
  for (uint64_t p = 0; p < pages; ++p)
    if (vec[p] & 1) out.push_back(p);
  return out;
}

void Ram::clear() {
  // MADV_DONTNEED on a private anonymous mapping gives zero-filled pages on
  // the next touch and frees the old ones.
  if (madvise(host_, size_, MADV_DONTNEED) != 0) std::memset(host_, 0, size_);
}

}  // namespace ksim
