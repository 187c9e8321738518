/* Sorting library and its exercise, for the x86-64 guest (see
 * workloads/x86/README.md): insertion sort, shell sort, quicksort,
 * mergesort, heapsort for int8/int16/int32/int64/uint32/uint64 arrays (one
 * instance per type, from a macro), a qsort-style generic sort through a
 * comparator pointer, counting sort for bytes and LSD radix sort for uint32,
 * a stable mergesort of records, and binary search.
 *
 * Inputs: random, sorted, reversed, constant, few distinct values and the
 * type's edge values, at sizes from 0 to 200 (insertion sort: up to 64).
 * Each result is checked (sorted, the same multiset as the input via an
 * order-independent checksum, lower_bound finds the first of equal keys)
 * and summarised by a hash of the sorted arrays. */
#include "prog.h"

/* ---- type-generic sorts ------------------------------------------------ */

#define DEFINE_SORTS(T, N)                                                   \
  static void insertion_##N(T *a, size_t n) {                                \
    for (size_t i = 1; i < n; ++i) {                                         \
      T v = a[i];                                                            \
      size_t j = i;                                                          \
      while (j > 0 && a[j - 1] > v) {                                        \
        a[j] = a[j - 1];                                                     \
        --j;                                                                 \
      }                                                                      \
      a[j] = v;                                                              \
    }                                                                        \
  }                                                                          \
                                                                             \
  static void shell_##N(T *a, size_t n) {                                    \
    static const size_t gaps[] = {701, 301, 132, 57, 23, 10, 4, 1};          \
    for (size_t g = 0; g < PROG_ARRAY_SIZE(gaps); ++g) {                     \
      size_t gap = gaps[g];                                                  \
      for (size_t i = gap; i < n; ++i) {                                     \
        T v = a[i];                                                          \
        size_t j = i;                                                        \
        for (; j >= gap && a[j - gap] > v; j -= gap) a[j] = a[j - gap];      \
        a[j] = v;                                                            \
      }                                                                      \
    }                                                                        \
  }                                                                          \
                                                                             \
  static void swap_##N(T *x, T *y) {                                         \
    T t = *x;                                                                \
    *x = *y;                                                                 \
    *y = t;                                                                  \
  }                                                                          \
                                                                             \
  /* Hoare partition around the median of three; recursion on the smaller  \
   * side, a loop on the larger, insertion sort below 12 elements. */       \
  static void quick_##N(T *a, size_t n) {                                    \
    while (n > 12) {                                                         \
      size_t mid = n / 2, last = n - 1;                                      \
      if (a[mid] < a[0]) swap_##N(&a[mid], &a[0]);                           \
      if (a[last] < a[0]) swap_##N(&a[last], &a[0]);                         \
      if (a[last] < a[mid]) swap_##N(&a[last], &a[mid]);                     \
      T pivot = a[mid];                                                      \
      size_t i = 0, j = last;                                                \
      for (;;) {                                                             \
        while (a[i] < pivot) ++i;                                            \
        while (a[j] > pivot) --j;                                            \
        if (i >= j) break;                                                   \
        swap_##N(&a[i], &a[j]);                                              \
        ++i;                                                                 \
        --j;                                                                 \
      }                                                                      \
      size_t left = j + 1; /* a[0..j] <= pivot <= a[j+1..n) */               \
      if (left < n - left) {                                                 \
        quick_##N(a, left);                                                  \
        a += left;                                                           \
        n -= left;                                                           \
      } else {                                                               \
        quick_##N(a + left, n - left);                                       \
        n = left;                                                            \
      }                                                                      \
    }                                                                        \
    insertion_##N(a, n);                                                     \
  }                                                                          \
                                                                             \
  /* Top-down mergesort with a scratch buffer of n elements. */             \
  static void merge_rec_##N(T *a, T *tmp, size_t n) {                        \
    if (n < 2) return;                                                       \
    size_t h = n / 2;                                                        \
    merge_rec_##N(a, tmp, h);                                                \
    merge_rec_##N(a + h, tmp, n - h);                                        \
    if (a[h - 1] <= a[h]) return; /* already in order */                     \
    memcpy(tmp, a, h * sizeof(T));                                           \
    size_t i = 0, j = h, k = 0;                                              \
    while (i < h && j < n) a[k++] = (a[j] < tmp[i]) ? a[j++] : tmp[i++];     \
    while (i < h) a[k++] = tmp[i++];                                         \
  }                                                                          \
                                                                             \
  static void sift_down_##N(T *a, size_t root, size_t n) {                   \
    for (;;) {                                                               \
      size_t child = 2 * root + 1;                                           \
      if (child >= n) return;                                                \
      if (child + 1 < n && a[child] < a[child + 1]) ++child;                 \
      if (!(a[root] < a[child])) return;                                     \
      swap_##N(&a[root], &a[child]);                                         \
      root = child;                                                          \
    }                                                                        \
  }                                                                          \
                                                                             \
  static void heap_##N(T *a, size_t n) {                                     \
    for (size_t i = n / 2; i-- > 0;) sift_down_##N(a, i, n);                 \
    for (size_t end = n; end > 1; --end) {                                   \
      swap_##N(&a[0], &a[end - 1]);                                          \
      sift_down_##N(a, 0, end - 1);                                          \
    }                                                                        \
  }                                                                          \
                                                                             \
  static int is_sorted_##N(const T *a, size_t n) {                           \
    for (size_t i = 1; i < n; ++i)                                           \
      if (a[i - 1] > a[i]) return 0;                                         \
    return 1;                                                                \
  }                                                                          \
                                                                             \
  /* First index with a[i] >= key in a sorted array. */                     \
  static size_t lower_bound_##N(const T *a, size_t n, T key) {               \
    size_t lo = 0, hi = n;                                                   \
    while (lo < hi) {                                                        \
      size_t mid = lo + (hi - lo) / 2;                                       \
      if (a[mid] < key)                                                      \
        lo = mid + 1;                                                        \
      else                                                                   \
        hi = mid;                                                            \
    }                                                                        \
    return lo;                                                               \
  }

DEFINE_SORTS(int8_t, i8)
DEFINE_SORTS(int16_t, i16)
DEFINE_SORTS(int32_t, i32)
DEFINE_SORTS(int64_t, i64)
DEFINE_SORTS(uint32_t, u32)
DEFINE_SORTS(uint64_t, u64)

/* ---- order-independent and order-dependent summaries ------------------- */

/* Sum of a mixing function over the elements: equal for any permutation. */
static uint64_t multiset_sum(const void *p, size_t n, size_t size,
                             int is_signed) {
  const unsigned char *b = p;
  uint64_t sum = 0;
  for (size_t i = 0; i < n; ++i, b += size) {
    uint64_t v = 0;
    switch (size) {
      case 1: v = is_signed ? (uint64_t)(int64_t) * (const int8_t *)b : *b; break;
      case 2: v = is_signed ? (uint64_t)(int64_t) * (const int16_t *)b : *(const uint16_t *)b; break;
      case 4: v = is_signed ? (uint64_t)(int64_t) * (const int32_t *)b : *(const uint32_t *)b; break;
      default: v = *(const uint64_t *)b; break;
    }
    v ^= v >> 31;
    v *= 0xbf58476d1ce4e5b9ull;
    v ^= v >> 29;
    sum += v;
  }
  return sum;
}

/* FNV-1a over the bytes: depends on the order. */
static uint32_t fnv_bytes(const void *p, size_t len) {
  const unsigned char *b = p;
  uint32_t h = 0x811c9dc5u;
  for (size_t i = 0; i < len; ++i) {
    h ^= b[i];
    h *= 0x01000193u;
  }
  return h;
}

/* ---- inputs ------------------------------------------------------------ */

enum pattern { RANDOM, SORTED, REVERSED, CONSTANT, FEW, EDGES, NPATTERNS };
static const char *const pattern_names[NPATTERNS] = {
    "random", "sorted", "reversed", "constant", "few", "edges"};

/* Fills a with pattern values; `lo`/`hi` are the type's extremes as int64
 * (for unsigned 64-bit, hi is -1 = UINT64_MAX after the conversion). */
#define DEFINE_FILL(T, N, LO, HI)                                           \
  static void fill_##N(T *a, size_t n, enum pattern p, prog_rng *r) {        \
    static const T edges[] = {(T)(LO), (T)(HI), 0, (T)1, (T)-1, (T)((LO) + 1), \
                              (T)((HI) - 1), (T)((HI) / 2)};                 \
    for (size_t i = 0; i < n; ++i) {                                        \
      uint64_t x = prog_rand(r);                                            \
      switch (p) {                                                          \
        case RANDOM: a[i] = (T)x; break;                                    \
        case SORTED: a[i] = (T)((LO) + (T)(i * 3)); break;                  \
        case REVERSED: a[i] = (T)((HI) - (T)(i * 5)); break;                \
        case CONSTANT: a[i] = (T)42; break;                                 \
        case FEW: a[i] = (T)((x >> 40) % 5) - (T)2; break;                  \
        default: a[i] = edges[(x >> 33) % PROG_ARRAY_SIZE(edges)]; break;   \
      }                                                                     \
    }                                                                       \
  }

DEFINE_FILL(int8_t, i8, INT8_MIN, INT8_MAX)
DEFINE_FILL(int16_t, i16, INT16_MIN, INT16_MAX)
DEFINE_FILL(int32_t, i32, INT32_MIN, INT32_MAX)
DEFINE_FILL(int64_t, i64, INT64_MIN, INT64_MAX)
DEFINE_FILL(uint32_t, u32, 0, UINT32_MAX)
DEFINE_FILL(uint64_t, u64, 0, UINT64_MAX)

#define MAX_N 1000 /* the largest array below */
static union {
  int64_t align;
  unsigned char bytes[MAX_N * 8];
} work, orig, scratch;

/* ---- the sort matrix ---------------------------------------------------- */

enum algo { INSERTION, SHELL, QUICK, MERGE, HEAP, NALGOS };
static const char *const algo_names[NALGOS] = {"insertion", "shell", "quick",
                                               "merge", "heap"};

static const size_t sizes[] = {0, 1, 2, 3, 7, 13, 64, 200};

/* Runs every algorithm on every pattern and size for one type; prints one
 * line per (pattern, algorithm): the hash over all sizes, "ok" or "BAD". */
#define DEFINE_RUN(T, N, IS_SIGNED)                                          \
  static void run_##N(prog_rng *r) {                                         \
    T *a = (T *)work.bytes, *o = (T *)orig.bytes, *tmp = (T *)scratch.bytes; \
    for (int p = 0; p < NPATTERNS; ++p) {                                    \
      for (int alg = 0; alg < NALGOS; ++alg) {                               \
        uint32_t h = 0;                                                      \
        int ok = 1;                                                          \
        for (size_t s = 0; s < PROG_ARRAY_SIZE(sizes); ++s) {                \
          size_t n = sizes[s];                                               \
          if (alg == INSERTION && n > 64) continue; /* quadratic */        \
          prog_rng rr = *r;                                                  \
          fill_##N(o, n, (enum pattern)p, &rr);                              \
          memcpy(a, o, n * sizeof(T));                                       \
          switch (alg) {                                                     \
            case INSERTION: insertion_##N(a, n); break;                      \
            case SHELL: shell_##N(a, n); break;                              \
            case QUICK: quick_##N(a, n); break;                              \
            case MERGE: merge_rec_##N(a, tmp, n); break;                     \
            default: heap_##N(a, n); break;                                  \
          }                                                                  \
          if (n > 0) { /* the first copy of the middle element */           \
            size_t m = n / 2, lb = lower_bound_##N(a, n, a[m]);              \
            if (lb > m || a[lb] != a[m] || (lb > 0 && !(a[lb - 1] < a[m])))  \
              ok = 0;                                                        \
          }                                                                  \
          if (!is_sorted_##N(a, n) ||                                        \
              multiset_sum(a, n, sizeof(T), IS_SIGNED) !=                    \
                  multiset_sum(o, n, sizeof(T), IS_SIGNED))                  \
            ok = 0;                                                          \
          h = h * 31 + fnv_bytes(a, n * sizeof(T));                          \
        }                                                                    \
        EXPECT(ok);                                                          \
        printf("%-4s %-9s %-9s %08x %s\n", #N, pattern_names[p],             \
               algo_names[alg], h, ok ? "ok" : "BAD");                       \
      }                                                                      \
    }                                                                        \
    prog_rand(r);                                                            \
  }

DEFINE_RUN(int8_t, i8, 1)
DEFINE_RUN(int16_t, i16, 1)
DEFINE_RUN(int32_t, i32, 1)
DEFINE_RUN(int64_t, i64, 1)
DEFINE_RUN(uint32_t, u32, 0)
DEFINE_RUN(uint64_t, u64, 0)

/* ---- generic sort through a comparator ----------------------------------- */

typedef int (*cmp_fn)(const void *, const void *);

static void swap_bytes(unsigned char *x, unsigned char *y, size_t size) {
  while (size--) {
    unsigned char t = *x;
    *x++ = *y;
    *y++ = t;
  }
}

/* Heapsort on arbitrary elements (not stable). */
static void gsort(void *base, size_t n, size_t size, cmp_fn cmp) {
  unsigned char *a = base;
  if (n < 2) return;
  for (size_t start = n / 2; start-- > 0;) {
    for (size_t root = start;;) {
      size_t c = 2 * root + 1;
      if (c >= n) break;
      if (c + 1 < n && cmp(a + c * size, a + (c + 1) * size) < 0) ++c;
      if (cmp(a + root * size, a + c * size) >= 0) break;
      swap_bytes(a + root * size, a + c * size, size);
      root = c;
    }
  }
  for (size_t end = n - 1; end > 0; --end) {
    swap_bytes(a, a + end * size, size);
    for (size_t root = 0;;) {
      size_t c = 2 * root + 1;
      if (c >= end) break;
      if (c + 1 < end && cmp(a + c * size, a + (c + 1) * size) < 0) ++c;
      if (cmp(a + root * size, a + c * size) >= 0) break;
      swap_bytes(a + root * size, a + c * size, size);
      root = c;
    }
  }
}

struct record {
  int32_t key;
  uint16_t seq; /* input position, to check stability */
  char name[10];
};

static int cmp_i32_desc(const void *x, const void *y) {
  int32_t a = *(const int32_t *)x, b = *(const int32_t *)y;
  return (a < b) - (a > b);
}

static int cmp_record(const void *x, const void *y) {
  const struct record *a = x, *b = y;
  if (a->key != b->key) return a->key < b->key ? -1 : 1;
  return (a->seq > b->seq) - (a->seq < b->seq);
}

static int cmp_u64_popcount(const void *x, const void *y) {
  uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
  int pa = 0, pb = 0;
  for (uint64_t v = a; v; v &= v - 1) ++pa;
  for (uint64_t v = b; v; v &= v - 1) ++pb;
  if (pa != pb) return pa - pb;
  return (a > b) - (a < b);
}

/* Stable bottom-up mergesort of records by key only (struct copies). */
static void merge_records(struct record *a, struct record *tmp, size_t n) {
  for (size_t width = 1; width < n; width *= 2) {
    for (size_t lo = 0; lo < n; lo += 2 * width) {
      size_t mid = lo + width < n ? lo + width : n;
      size_t hi = lo + 2 * width < n ? lo + 2 * width : n;
      size_t i = lo, j = mid, k = lo;
      while (i < mid && j < hi) tmp[k++] = (a[j].key < a[i].key) ? a[j++] : a[i++];
      while (i < mid) tmp[k++] = a[i++];
      while (j < hi) tmp[k++] = a[j++];
    }
    memcpy(a, tmp, n * sizeof(*a));
  }
}

/* ---- special-purpose sorts ------------------------------------------------ */

static void counting_sort_u8(uint8_t *a, size_t n) {
  size_t count[256];
  memset(count, 0, sizeof count);
  for (size_t i = 0; i < n; ++i) ++count[a[i]];
  size_t k = 0;
  for (unsigned v = 0; v < 256; ++v)
    for (size_t c = count[v]; c > 0; --c) a[k++] = (uint8_t)v;
}

static void radix_sort_u32(uint32_t *a, uint32_t *tmp, size_t n) {
  for (unsigned shift = 0; shift < 32; shift += 8) {
    size_t count[257] = {0};
    for (size_t i = 0; i < n; ++i) ++count[((a[i] >> shift) & 0xff) + 1];
    for (int d = 0; d < 256; ++d) count[d + 1] += count[d];
    for (size_t i = 0; i < n; ++i) tmp[count[(a[i] >> shift) & 0xff]++] = a[i];
    memcpy(a, tmp, n * sizeof(*a));
  }
}

static void print_i64s(const char *what, const int64_t *a, size_t n) {
  printf("%s:", what);
  for (size_t i = 0; i < n; ++i) printf(" %ld", a[i]);
  printf("\n");
}

int main(void) {
  prog_rng r = {prog_seed()};
  printf("x86 sort: insertion, shell, quick, merge, heap x 6 types x %d patterns\n",
         NPATTERNS);

  run_i8(&r);
  run_i16(&r);
  run_i32(&r);
  run_i64(&r);
  run_u32(&r);
  run_u64(&r);

  /* Edge values in full: int64 extremes sorted by quicksort and heapsort. */
  {
    int64_t e[12], f[12];
    prog_rng rr = r;
    fill_i64(e, 12, EDGES, &rr);
    memcpy(f, e, sizeof e);
    quick_i64(e, 12);
    heap_i64(f, 12);
    print_i64s("i64 edges quick", e, 12);
    EXPECT(memcmp(e, f, sizeof e) == 0);
    int8_t b[10];
    fill_i8(b, 10, EDGES, &rr);
    merge_rec_i8(b, (int8_t *)scratch.bytes, 10);
    printf("i8 edges merge:");
    for (int i = 0; i < 10; ++i) printf(" %d", b[i]);
    printf("\n");
    uint64_t u[8];
    fill_u64(u, 8, EDGES, &rr);
    shell_u64(u, 8);
    printf("u64 edges shell:");
    for (int i = 0; i < 8; ++i) printf(" %lx", u[i]);
    printf("\n");
  }

  /* Binary search over a sorted int32 array with duplicates. */
  {
    int32_t *a = (int32_t *)work.bytes;
    prog_rng rr = r;
    fill_i32(a, 1000, FEW, &rr);
    for (int i = 0; i < 1000; ++i) a[i] = a[i] * 1000 + (i % 7);
    quick_i32(a, 1000);
    uint32_t h = 0;
    for (int32_t key = -2500; key <= 2500; key += 250) {
      size_t lb = lower_bound_i32(a, 1000, key);
      EXPECT(lb == 1000 || a[lb] >= key);
      EXPECT(lb == 0 || a[lb - 1] < key);
      h = h * 1000003u + (uint32_t)lb;
      printf("%d:%u ", key, (unsigned)lb);
    }
    printf("\nlower_bound hash %08x\n", h);
  }

  /* Generic heapsort through comparator pointers. */
  {
    int32_t *a = (int32_t *)work.bytes;
    prog_rng rr = r;
    fill_i32(a, 500, RANDOM, &rr);
    gsort(a, 500, sizeof *a, cmp_i32_desc);
    int desc = 1;
    for (int i = 1; i < 500; ++i) desc &= a[i - 1] >= a[i];
    EXPECT(desc);
    printf("gsort i32 desc: first %d last %d hash %08x\n", a[0], a[499],
           fnv_bytes(a, 500 * sizeof *a));

    uint64_t *u = (uint64_t *)work.bytes;
    fill_u64(u, 300, RANDOM, &rr);
    for (int i = 0; i < 300; ++i) u[i] >>= (i % 64);
    gsort(u, 300, sizeof *u, cmp_u64_popcount);
    printf("gsort u64 by popcount: %lx %lx ... %lx hash %08x\n", u[0], u[1],
           u[299], fnv_bytes(u, 300 * sizeof *u));
  }

  /* Records: stable mergesort by key vs generic sort by (key, seq). */
  {
    static struct record recs[200], copy[200], tmp[200];
    prog_rng rr = r;
    for (int i = 0; i < 200; ++i) {
      recs[i].key = (int32_t)(prog_rand(&rr) % 17) - 8;
      recs[i].seq = (uint16_t)i;
      for (int c = 0; c < 9; ++c) recs[i].name[c] = (char)('a' + (i + c * 7) % 26);
      recs[i].name[9] = '\0';
    }
    memcpy(copy, recs, sizeof recs);
    merge_records(recs, tmp, 200);
    gsort(copy, 200, sizeof copy[0], cmp_record);
    int same = 1;
    for (int i = 0; i < 200; ++i)
      same &= recs[i].key == copy[i].key && recs[i].seq == copy[i].seq &&
              memcmp(recs[i].name, copy[i].name, sizeof recs[i].name) == 0;
    EXPECT(same);
    printf("records stable: %s; first %d/%u/%s last %d/%u/%s\n",
           same ? "yes" : "no", recs[0].key, recs[0].seq, recs[0].name,
           recs[199].key, recs[199].seq, recs[199].name);
  }

  /* Counting sort of bytes and radix sort of uint32 vs quicksort. */
  {
    uint8_t *b = (uint8_t *)work.bytes;
    prog_rng rr = r;
    for (int i = 0; i < 1000; ++i) b[i] = (uint8_t)(prog_rand(&rr) >> 56);
    counting_sort_u8(b, 1000);
    int ok = 1;
    for (int i = 1; i < 1000; ++i) ok &= b[i - 1] <= b[i];
    EXPECT(ok);
    printf("counting u8: %u %u %u ... %u hash %08x\n", b[0], b[1], b[2], b[999],
           fnv_bytes(b, 1000));

    uint32_t *x = (uint32_t *)work.bytes, *y = (uint32_t *)orig.bytes;
    fill_u32(x, 1000, RANDOM, &rr);
    memcpy(y, x, 1000 * sizeof *x);
    radix_sort_u32(x, (uint32_t *)scratch.bytes, 1000);
    quick_u32(y, 1000);
    EXPECT(memcmp(x, y, 1000 * sizeof *x) == 0);
    printf("radix u32: %x %x ... %x hash %08x\n", x[0], x[1], x[999],
           fnv_bytes(x, 1000 * sizeof *x));
  }

  printf("sort: %s\n", prog_failures ? "FAILED" : "all ok");
  return prog_failures != 0;
}
