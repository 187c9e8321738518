/* The default guest: what `ksim run` executes when no --elf is given.
 *
 * A short, deterministic program that does a little real work and checks
 * every result, so a run that prints "all checks passed" and exits 0 says
 * the core is basically sound. Each piece of work is its own non-inlined
 * function with a plain name (crc32, sort_u32, count_primes, ...) so that
 * kprobes demos have stable symbols to attach to. About 190k instructions.
 *
 * Inputs come through `volatile` variables; otherwise GCC would compute the
 * answers at compile time and the guest would only print constants. */
#include "libguest.h"

static volatile const char message[] = "The quick brown fox jumps over the lazy dog";
static volatile uint32_t sort_seed = 12345;
static volatile uint32_t prime_limit = 10000;
static volatile uint64_t fact_n = 20, fib_n = 90;

/* Bitwise CRC-32 (IEEE, reflected, polynomial 0xEDB88320). */
__attribute__((noinline)) uint32_t crc32(const volatile char *p, size_t n) {
  uint32_t crc = 0xffffffffu;
  for (size_t i = 0; i < n; ++i) {
    crc ^= (uint8_t)p[i];
    for (int b = 0; b < 8; ++b) crc = (crc >> 1) ^ (0xedb88320u & (0u - (crc & 1)));
  }
  return ~crc;
}

__attribute__((noinline)) void sort_u32(uint32_t *a, size_t n) {
  for (size_t i = 1; i < n; ++i) {
    uint32_t v = a[i];
    size_t j = i;
    for (; j > 0 && a[j - 1] > v; --j) a[j] = a[j - 1];
    a[j] = v;
  }
}

/* Sieve of Eratosthenes; counts the primes below `limit` (at most 10000). */
static uint8_t composite[10000];
__attribute__((noinline)) unsigned count_primes(unsigned limit) {
  if (limit > sizeof composite) limit = sizeof composite;
  memset(composite, 0, limit);
  unsigned count = 0;
  for (unsigned i = 2; i < limit; ++i) {
    if (composite[i]) continue;
    ++count;
    for (unsigned j = i * i; j < limit; j += i) composite[j] = 1;
  }
  return count;
}

__attribute__((noinline)) uint64_t factorial(uint64_t n) {
  uint64_t r = 1;
  for (uint64_t i = 2; i <= n; ++i) r *= i;
  return r;
}

__attribute__((noinline)) uint64_t fibonacci(uint64_t n) {
  uint64_t a = 0, b = 1;
  while (n--) {
    uint64_t t = a + b;
    a = b;
    b = t;
  }
  return a;
}

static void check_crc(void) {
  uint32_t crc = crc32(message, sizeof message - 1);
  printf("  crc32(\"The quick brown fox...\") = 0x%08x\n", crc);
  CHECK_EQ(crc, 0x414fa339); /* the well-known CRC-32 of this sentence */
}

static void check_sort(void) {
  enum { N = 100 };
  uint32_t a[N];
  uint32_t x = sort_seed;
  uint64_t sum_before = 0, sum_after = 0;
  for (int i = 0; i < N; ++i) {
    x = x * 1103515245u + 12345u; /* classic LCG, enough to shuffle */
    a[i] = x >> 8;
    sum_before += a[i];
  }
  sort_u32(a, N);
  for (int i = 0; i < N; ++i) {
    sum_after += a[i];
    if (i > 0) CHECK(a[i - 1] <= a[i]);
  }
  CHECK_EQ(sum_after, sum_before); /* same multiset, not just ordered */
  printf("  sorted %d numbers: min=%u max=%u\n", N, a[0], a[N - 1]);
}

static void check_primes(void) {
  unsigned n = count_primes(prime_limit);
  printf("  primes below %u: %u\n", (unsigned)prime_limit, n);
  CHECK_EQ(n, 1229);
}

static void check_muldiv(void) {
  uint64_t f20 = factorial(fact_n), f19 = factorial(fact_n - 1);
  uint64_t fib = fibonacci(fib_n);
  printf("  %lu! = %lu, fib(%lu) = %lu\n", (unsigned long)fact_n, f20,
         (unsigned long)fib_n, fib);
  CHECK_EQ(f20, 2432902008176640000ull);
  CHECK_EQ(f20 / f19, 20);
  CHECK_EQ(f20 % 1000003, 2432902008176640000ull % 1000003);
  CHECK_EQ(fib, 2880067194370816120ull);
  /* Signed division truncates toward zero; the remainder takes the
   * dividend's sign. */
  int64_t neg = -(int64_t)fib;
  CHECK_EQ(neg / 1000, -(int64_t)(fib / 1000));
  CHECK_EQ(neg % 1000, -(int64_t)(fib % 1000));
}

int main(void) {
  printf("ksim default guest: RV64IMAC, M-mode, hart 0\n");
  check_crc();
  check_sort();
  check_primes();
  check_muldiv();
  printf("all checks passed (%u checks)\n", guest_checks_run);
  return 0;
}
