/* Hash library and its exercise, for the x86-64 guest (see
 * workloads/x86/README.md): FNV-1a (32 and 64), CRC-32 (bitwise and
 * table-driven) and CRC-32C, Adler-32, MurmurHash3 (x86_32 and x64_128),
 * SipHash-2-4, SHA-256, and an open-addressing hash table keyed by strings.
 *
 * Known-answer tests come from the algorithms' specifications and reference
 * implementations; the rest are printed for the byte-for-byte comparison
 * with the native build. Bit operations, rotates, shifts by constants and by
 * variables, byte/word loads of unaligned data, 32- and 64-bit multiplies. */
#include "prog.h"

/* ---- helpers --------------------------------------------------------------- */

static inline uint32_t rotl32(uint32_t x, unsigned r) {
  return (x << (r & 31)) | (x >> ((32 - r) & 31));
}
static inline uint32_t rotr32(uint32_t x, unsigned r) {
  return (x >> (r & 31)) | (x << ((32 - r) & 31));
}
static inline uint64_t rotl64(uint64_t x, unsigned r) {
  return (x << (r & 63)) | (x >> ((64 - r) & 63));
}

/* Little-endian loads from byte pointers at any alignment. */
static inline uint32_t load_le32(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
         (uint32_t)p[3] << 24;
}
static inline uint64_t load_le64(const uint8_t *p) {
  return (uint64_t)load_le32(p) | (uint64_t)load_le32(p + 4) << 32;
}
static inline uint32_t load_be32(const uint8_t *p) {
  return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 |
         (uint32_t)p[3];
}

static size_t str_len(const char *s) {
  size_t n = 0;
  while (s[n]) ++n;
  return n;
}

/* ---- FNV-1a ------------------------------------------------------------------ */

static uint32_t fnv1a32(const void *data, size_t len) {
  const uint8_t *p = data;
  uint32_t h = 0x811c9dc5u;
  for (size_t i = 0; i < len; ++i) h = (h ^ p[i]) * 0x01000193u;
  return h;
}

static uint64_t fnv1a64(const void *data, size_t len) {
  const uint8_t *p = data;
  uint64_t h = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < len; ++i) h = (h ^ p[i]) * 0x100000001b3ull;
  return h;
}

/* ---- CRC-32 (IEEE 802.3, reflected 0xEDB88320) and CRC-32C (Castagnoli) ---- */

static uint32_t crc32_bitwise(uint32_t poly, const void *data, size_t len) {
  const uint8_t *p = data;
  uint32_t crc = 0xffffffffu;
  for (size_t i = 0; i < len; ++i) {
    crc ^= p[i];
    for (int b = 0; b < 8; ++b) crc = (crc >> 1) ^ (poly & (0u - (crc & 1)));
  }
  return ~crc;
}

static uint32_t crc_table[256];
static uint32_t crc_table_poly;

static void crc32_make_table(uint32_t poly) {
  for (uint32_t n = 0; n < 256; ++n) {
    uint32_t c = n;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? poly ^ (c >> 1) : c >> 1;
    crc_table[n] = c;
  }
  crc_table_poly = poly;
}

static uint32_t crc32_table(uint32_t poly, const void *data, size_t len) {
  if (crc_table_poly != poly) crc32_make_table(poly);
  const uint8_t *p = data;
  uint32_t crc = 0xffffffffu;
  while (len--) crc = crc_table[(crc ^ *p++) & 0xff] ^ (crc >> 8);
  return crc ^ 0xffffffffu;
}

/* ---- Adler-32 ------------------------------------------------------------------ */

static uint32_t adler32(const void *data, size_t len) {
  const uint8_t *p = data;
  uint32_t a = 1, b = 0;
  for (size_t i = 0; i < len; ++i) {
    a = (a + p[i]) % 65521u;
    b = (b + a) % 65521u;
  }
  return b << 16 | a;
}

/* ---- MurmurHash3 (Austin Appleby's reference, public domain) -------------------- */

static inline uint32_t fmix32(uint32_t h) {
  h ^= h >> 16;
  h *= 0x85ebca6bu;
  h ^= h >> 13;
  h *= 0xc2b2ae35u;
  h ^= h >> 16;
  return h;
}

static inline uint64_t fmix64(uint64_t k) {
  k ^= k >> 33;
  k *= 0xff51afd7ed558ccdull;
  k ^= k >> 33;
  k *= 0xc4ceb9fe1a85ec53ull;
  k ^= k >> 33;
  return k;
}

static uint32_t murmur3_32(const void *key, size_t len, uint32_t seed) {
  const uint8_t *data = key;
  const size_t nblocks = len / 4;
  const uint32_t c1 = 0xcc9e2d51u, c2 = 0x1b873593u;
  uint32_t h1 = seed;
  for (size_t i = 0; i < nblocks; ++i) {
    uint32_t k1 = load_le32(data + 4 * i);
    k1 *= c1;
    k1 = rotl32(k1, 15);
    k1 *= c2;
    h1 ^= k1;
    h1 = rotl32(h1, 13);
    h1 = h1 * 5 + 0xe6546b64u;
  }
  const uint8_t *tail = data + nblocks * 4;
  uint32_t k1 = 0;
  switch (len & 3) {
    case 3: k1 ^= (uint32_t)tail[2] << 16; /* fall through */
    case 2: k1 ^= (uint32_t)tail[1] << 8;  /* fall through */
    case 1:
      k1 ^= tail[0];
      k1 *= c1;
      k1 = rotl32(k1, 15);
      k1 *= c2;
      h1 ^= k1;
  }
  h1 ^= (uint32_t)len;
  return fmix32(h1);
}

static void murmur3_x64_128(const void *key, size_t len, uint32_t seed,
                            uint64_t out[2]) {
  const uint8_t *data = key;
  const size_t nblocks = len / 16;
  uint64_t h1 = seed, h2 = seed;
  const uint64_t c1 = 0x87c37b91114253d5ull, c2 = 0x4cf5ad432745937full;
  for (size_t i = 0; i < nblocks; ++i) {
    uint64_t k1 = load_le64(data + 16 * i), k2 = load_le64(data + 16 * i + 8);
    k1 *= c1;
    k1 = rotl64(k1, 31);
    k1 *= c2;
    h1 ^= k1;
    h1 = rotl64(h1, 27);
    h1 += h2;
    h1 = h1 * 5 + 0x52dce729;
    k2 *= c2;
    k2 = rotl64(k2, 33);
    k2 *= c1;
    h2 ^= k2;
    h2 = rotl64(h2, 31);
    h2 += h1;
    h2 = h2 * 5 + 0x38495ab5;
  }
  const uint8_t *tail = data + nblocks * 16;
  uint64_t k1 = 0, k2 = 0;
  switch (len & 15) {
    case 15: k2 ^= (uint64_t)tail[14] << 48; /* fall through */
    case 14: k2 ^= (uint64_t)tail[13] << 40; /* fall through */
    case 13: k2 ^= (uint64_t)tail[12] << 32; /* fall through */
    case 12: k2 ^= (uint64_t)tail[11] << 24; /* fall through */
    case 11: k2 ^= (uint64_t)tail[10] << 16; /* fall through */
    case 10: k2 ^= (uint64_t)tail[9] << 8;   /* fall through */
    case 9:
      k2 ^= (uint64_t)tail[8];
      k2 *= c2;
      k2 = rotl64(k2, 33);
      k2 *= c1;
      h2 ^= k2;
      /* fall through */
    case 8: k1 ^= (uint64_t)tail[7] << 56; /* fall through */
    case 7: k1 ^= (uint64_t)tail[6] << 48; /* fall through */
    case 6: k1 ^= (uint64_t)tail[5] << 40; /* fall through */
    case 5: k1 ^= (uint64_t)tail[4] << 32; /* fall through */
    case 4: k1 ^= (uint64_t)tail[3] << 24; /* fall through */
    case 3: k1 ^= (uint64_t)tail[2] << 16; /* fall through */
    case 2: k1 ^= (uint64_t)tail[1] << 8;  /* fall through */
    case 1:
      k1 ^= (uint64_t)tail[0];
      k1 *= c1;
      k1 = rotl64(k1, 31);
      k1 *= c2;
      h1 ^= k1;
  }
  h1 ^= (uint64_t)len;
  h2 ^= (uint64_t)len;
  h1 += h2;
  h2 += h1;
  h1 = fmix64(h1);
  h2 = fmix64(h2);
  h1 += h2;
  h2 += h1;
  out[0] = h1;
  out[1] = h2;
}

/* ---- SipHash-2-4 (Aumasson and Bernstein) ------------------------------------------ */

#define SIPROUND                 \
  do {                           \
    v0 += v1;                    \
    v1 = rotl64(v1, 13);         \
    v1 ^= v0;                    \
    v0 = rotl64(v0, 32);         \
    v2 += v3;                    \
    v3 = rotl64(v3, 16);         \
    v3 ^= v2;                    \
    v0 += v3;                    \
    v3 = rotl64(v3, 21);         \
    v3 ^= v0;                    \
    v2 += v1;                    \
    v1 = rotl64(v1, 17);         \
    v1 ^= v2;                    \
    v2 = rotl64(v2, 32);         \
  } while (0)

static uint64_t siphash24(const uint8_t key[16], const void *data, size_t len) {
  const uint8_t *in = data;
  uint64_t k0 = load_le64(key), k1 = load_le64(key + 8);
  uint64_t v0 = 0x736f6d6570736575ull ^ k0;
  uint64_t v1 = 0x646f72616e646f6dull ^ k1;
  uint64_t v2 = 0x6c7967656e657261ull ^ k0;
  uint64_t v3 = 0x7465646279746573ull ^ k1;
  const uint8_t *end = in + len - (len % 8);
  for (; in != end; in += 8) {
    uint64_t m = load_le64(in);
    v3 ^= m;
    SIPROUND;
    SIPROUND;
    v0 ^= m;
  }
  uint64_t b = (uint64_t)len << 56;
  for (int i = (int)(len & 7) - 1; i >= 0; --i) b |= (uint64_t)in[i] << (8 * i);
  v3 ^= b;
  SIPROUND;
  SIPROUND;
  v0 ^= b;
  v2 ^= 0xff;
  SIPROUND;
  SIPROUND;
  SIPROUND;
  SIPROUND;
  return v0 ^ v1 ^ v2 ^ v3;
}

/* ---- SHA-256 (FIPS 180-4) ------------------------------------------------------------ */

struct sha256 {
  uint32_t h[8];
  uint8_t buf[64];
  size_t used;
  uint64_t total;
};

static const uint32_t sha256_k[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1,
    0x923f82a4, 0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3,
    0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786,
    0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147,
    0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13,
    0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
    0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a,
    0x5b9cca4f, 0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208,
    0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

static void sha256_init(struct sha256 *s) {
  static const uint32_t iv[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372,
                                 0xa54ff53a, 0x510e527f, 0x9b05688c,
                                 0x1f83d9ab, 0x5be0cd19};
  memcpy(s->h, iv, sizeof iv);
  s->used = 0;
  s->total = 0;
}

static void sha256_block(uint32_t h[8], const uint8_t *p) {
  uint32_t w[64];
  for (int i = 0; i < 16; ++i) w[i] = load_be32(p + 4 * i);
  for (int i = 16; i < 64; ++i) {
    uint32_t s0 = rotr32(w[i - 15], 7) ^ rotr32(w[i - 15], 18) ^ (w[i - 15] >> 3);
    uint32_t s1 = rotr32(w[i - 2], 17) ^ rotr32(w[i - 2], 19) ^ (w[i - 2] >> 10);
    w[i] = w[i - 16] + s0 + w[i - 7] + s1;
  }
  uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5],
           g = h[6], hh = h[7];
  for (int i = 0; i < 64; ++i) {
    uint32_t S1 = rotr32(e, 6) ^ rotr32(e, 11) ^ rotr32(e, 25);
    uint32_t ch = (e & f) ^ (~e & g);
    uint32_t t1 = hh + S1 + ch + sha256_k[i] + w[i];
    uint32_t S0 = rotr32(a, 2) ^ rotr32(a, 13) ^ rotr32(a, 22);
    uint32_t maj = (a & b) ^ (a & c) ^ (b & c);
    uint32_t t2 = S0 + maj;
    hh = g;
    g = f;
    f = e;
    e = d + t1;
    d = c;
    c = b;
    b = a;
    a = t1 + t2;
  }
  h[0] += a;
  h[1] += b;
  h[2] += c;
  h[3] += d;
  h[4] += e;
  h[5] += f;
  h[6] += g;
  h[7] += hh;
}

static void sha256_update(struct sha256 *s, const void *data, size_t len) {
  const uint8_t *p = data;
  s->total += len;
  while (len > 0) {
    size_t take = 64 - s->used;
    if (take > len) take = len;
    memcpy(s->buf + s->used, p, take);
    s->used += take;
    p += take;
    len -= take;
    if (s->used == 64) {
      sha256_block(s->h, s->buf);
      s->used = 0;
    }
  }
}

static void sha256_final(struct sha256 *s, uint8_t out[32]) {
  uint64_t bits = s->total * 8;
  uint8_t pad = 0x80;
  sha256_update(s, &pad, 1);
  uint8_t zero = 0;
  while (s->used != 56) sha256_update(s, &zero, 1);
  uint8_t len_be[8];
  for (int i = 0; i < 8; ++i) len_be[i] = (uint8_t)(bits >> (56 - 8 * i));
  sha256_update(s, len_be, 8);
  for (int i = 0; i < 8; ++i) {
    out[4 * i] = (uint8_t)(s->h[i] >> 24);
    out[4 * i + 1] = (uint8_t)(s->h[i] >> 16);
    out[4 * i + 2] = (uint8_t)(s->h[i] >> 8);
    out[4 * i + 3] = (uint8_t)s->h[i];
  }
}

static void to_hex(const uint8_t *b, size_t n, char *out) {
  static const char hex[] = "0123456789abcdef";
  for (size_t i = 0; i < n; ++i) {
    out[2 * i] = hex[b[i] >> 4];
    out[2 * i + 1] = hex[b[i] & 15];
  }
  out[2 * n] = '\0';
}

static void sha256_hex(const void *data, size_t len, char out[65]) {
  struct sha256 s;
  uint8_t d[32];
  sha256_init(&s);
  sha256_update(&s, data, len);
  sha256_final(&s, d);
  to_hex(d, 32, out);
}

/* ---- a string-keyed hash table (open addressing, linear probing) ------------------ */

#define TABLE_SIZE 256 /* power of two */
struct entry {
  const char *key;
  uint32_t hash;
  int value;
};
static struct entry table[TABLE_SIZE];
static unsigned table_probes;

static int streq(const char *a, const char *b) {
  while (*a && *a == *b) ++a, ++b;
  return *a == *b;
}

static struct entry *table_find(const char *key, uint32_t h, int insert) {
  for (uint32_t i = h & (TABLE_SIZE - 1);; i = (i + 1) & (TABLE_SIZE - 1)) {
    ++table_probes;
    struct entry *e = &table[i];
    if (!e->key) {
      if (!insert) return 0;
      e->key = key;
      e->hash = h;
      e->value = 0;
      return e;
    }
    if (e->hash == h && streq(e->key, key)) return e;
  }
}

/* ---- main ------------------------------------------------------------------------ */

static const char *const kat_strings[] = {
    "", "a", "abc", "message digest", "abcdefghijklmnopqrstuvwxyz",
    "123456789", "The quick brown fox jumps over the lazy dog",
    "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"};

static const char *const text =
    "it was the best of times it was the worst of times it was the age of "
    "wisdom it was the age of foolishness it was the epoch of belief it was "
    "the epoch of incredulity it was the season of light it was the season "
    "of darkness it was the spring of hope it was the winter of despair";

int main(void) {
  prog_rng r = {prog_seed()};
  printf("x86 hash: fnv1a crc32 crc32c adler32 murmur3 siphash sha256\n");

  /* Known answers. */
  EXPECT(fnv1a32("", 0) == 0x811c9dc5u);
  EXPECT(fnv1a32("a", 1) == 0xe40c292cu);
  EXPECT(fnv1a64("a", 1) == 0xaf63dc4c8601ec8cull);
  EXPECT(crc32_bitwise(0xedb88320u, "123456789", 9) == 0xcbf43926u);
  EXPECT(crc32_table(0xedb88320u, "123456789", 9) == 0xcbf43926u);
  EXPECT(crc32_table(0x82f63b78u, "123456789", 9) == 0xe3069283u);
  EXPECT(adler32("Wikipedia", 9) == 0x11e60398u);
  EXPECT(murmur3_32("", 0, 0) == 0);
  EXPECT(murmur3_32("", 0, 1) == 0x514e28b7u);
  EXPECT(murmur3_32("The quick brown fox jumps over the lazy dog", 43,
                    0x9747b28cu) == 0x2fa826cdu);
  {
    uint64_t m[2];
    murmur3_x64_128("The quick brown fox jumps over the lazy dog", 43, 0, m);
    EXPECT(m[0] == 0xe34bbc7bbc071b6cull && m[1] == 0x7a433ca9c49a9347ull);
  }
  {
    char hex[65];
    sha256_hex("abc", 3, hex);
    EXPECT(streq(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"));
    sha256_hex("", 0, hex);
    EXPECT(streq(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"));
  }

  for (size_t i = 0; i < PROG_ARRAY_SIZE(kat_strings); ++i) {
    const char *s = kat_strings[i];
    size_t n = str_len(s);
    uint64_t m[2];
    char hex[65];
    murmur3_x64_128(s, n, 0, m);
    sha256_hex(s, n, hex);
    printf("\"%s\"\n", s);
    printf("  fnv1a32 %08x fnv1a64 %016lx adler32 %08x\n", fnv1a32(s, n),
           fnv1a64(s, n), adler32(s, n));
    printf("  crc32 %08x/%08x crc32c %08x/%08x\n",
           crc32_bitwise(0xedb88320u, s, n), crc32_table(0xedb88320u, s, n),
           crc32_bitwise(0x82f63b78u, s, n), crc32_table(0x82f63b78u, s, n));
    printf("  murmur3_32 %08x murmur3_128 %016lx%016lx\n",
           murmur3_32(s, n, 0x9747b28cu), m[0], m[1]);
    printf("  sha256 %s\n", hex);
  }

  /* SipHash-2-4 with the paper's key 00 01 .. 0f over messages 00 01 .. (n-1),
   * n = 0..63; vectors 0, 15 and 63 from the reference test vectors. */
  {
    uint8_t key[16], msg[64];
    for (int i = 0; i < 16; ++i) key[i] = (uint8_t)i;
    for (int i = 0; i < 64; ++i) msg[i] = (uint8_t)i;
    uint64_t acc = 0;
    for (int n = 0; n < 64; ++n) {
      uint64_t h = siphash24(key, msg, (size_t)n);
      acc = rotl64(acc, 7) ^ h;
      if (n % 8 == 0 || n == 15 || n == 63) printf("siphash[%2d] %016lx\n", n, h);
      if (n == 0) EXPECT(h == 0x726fdb47dd0e0e31ull);
      if (n == 15) EXPECT(h == 0xa129ca6149be45e5ull);
      if (n == 63) EXPECT(h == 0x958a324ceb064572ull);
    }
    printf("siphash all %016lx\n", acc);
  }

  /* Larger inputs: pseudo-random bytes at every alignment and length. */
  {
    static uint8_t big[4099];
    for (size_t i = 0; i < sizeof big; ++i) big[i] = (uint8_t)(prog_rand(&r) >> 56);
    uint32_t c = 0;
    uint64_t mm = 0;
    for (int off = 0; off < 8; ++off) {
      for (size_t len = 0; len < 40; len += 3) {
        c = c * 3 + murmur3_32(big + off, len, (uint32_t)off) + fnv1a32(big + off, len);
        uint64_t m[2];
        murmur3_x64_128(big + off, len, (uint32_t)len, m);
        mm ^= m[0] + rotl64(m[1], (unsigned)(len + off));
      }
    }
    printf("unaligned murmur/fnv %08x %016lx\n", c, mm);
    char hex[65];
    sha256_hex(big, sizeof big, hex);
    printf("big: crc32 %08x crc32c %08x adler %08x sha256 %s\n",
           crc32_table(0xedb88320u, big, sizeof big),
           crc32_table(0x82f63b78u, big, sizeof big), adler32(big, sizeof big),
           hex);
    EXPECT(crc32_bitwise(0xedb88320u, big, sizeof big) ==
           crc32_table(0xedb88320u, big, sizeof big));
    /* Incremental SHA-256 in uneven pieces equals the one-shot hash. */
    struct sha256 s;
    uint8_t d[32];
    char hex2[65];
    sha256_init(&s);
    for (size_t done = 0, piece = 1; done < sizeof big; piece = piece * 2 + 1) {
      size_t take = piece < sizeof big - done ? piece : sizeof big - done;
      sha256_update(&s, big + done, take);
      done += take;
    }
    sha256_final(&s, d);
    to_hex(d, 32, hex2);
    EXPECT(streq(hex, hex2));
  }

  /* Word counts of a text through the hash table. */
  {
    static char words[512];
    size_t n = str_len(text);
    EXPECT(n < sizeof words);
    memcpy(words, text, n + 1);
    int distinct = 0, total = 0;
    for (char *p = words; *p;) {
      while (*p == ' ') *p++ = '\0';
      if (!*p) break;
      char *w = p; /* the word stays in words[], terminated, as the key */
      while (*p && *p != ' ') ++p;
      size_t len = (size_t)(p - w);
      if (*p) *p++ = '\0';
      struct entry *e = table_find(w, fnv1a32(w, len), 1);
      if (e->value++ == 0) ++distinct;
      ++total;
    }
    printf("words %d distinct %d probes %u\n", total, distinct, table_probes);
    static const char *const q[] = {"it", "was", "the", "of", "age", "hope",
                                    "despair", "missing"};
    for (size_t i = 0; i < PROG_ARRAY_SIZE(q); ++i) {
      struct entry *e = table_find(q[i], fnv1a32(q[i], str_len(q[i])), 0);
      printf("  %-8s %d\n", q[i], e ? e->value : 0);
    }
  }

  printf("hash: %s\n", prog_failures ? "FAILED" : "all ok");
  return prog_failures != 0;
}
