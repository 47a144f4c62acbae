#include "kc_crc.h"
#include <stdlib.h>
#include <string.h>

/* Slice-by-8 tables, built once on first use.  Building them lazily keeps
 * the library free of large generated source tables. */
static uint32_t crc32c_tab[8][256];
static uint32_t crc32_tab[8][256];
static volatile int tables_ready = 0;

static void build_tables(uint32_t tab[8][256], uint32_t poly)
{
    for (uint32_t n = 0; n < 256; n++) {
        uint32_t c = n;
        for (int k = 0; k < 8; k++)
            c = (c & 1) ? (c >> 1) ^ poly : c >> 1;
        tab[0][n] = c;
    }
    for (uint32_t n = 0; n < 256; n++) {
        uint32_t c = tab[0][n];
        for (int k = 1; k < 8; k++) {
            c = tab[0][c & 0xff] ^ (c >> 8);
            tab[k][n] = c;
        }
    }
}

static void ensure_tables(void)
{
    /* Idempotent: two threads racing here write identical values. */
    if (!tables_ready) {
        build_tables(crc32c_tab, 0x82F63B78u);
        build_tables(crc32_tab, 0xEDB88320u);
        __atomic_store_n(&tables_ready, 1, __ATOMIC_RELEASE);
    }
}

static uint32_t slice8(uint32_t tab[8][256], uint32_t crc, const uint8_t *p, size_t len)
{
    while (len && ((uintptr_t)p & 7)) {
        crc = tab[0][(crc ^ *p++) & 0xff] ^ (crc >> 8);
        len--;
    }
    while (len >= 8) {
        uint32_t lo, hi;
        memcpy(&lo, p, 4);
        memcpy(&hi, p + 4, 4);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
        lo = __builtin_bswap32(lo);
        hi = __builtin_bswap32(hi);
#endif
        lo ^= crc;
        crc = tab[7][lo & 0xff] ^ tab[6][(lo >> 8) & 0xff] ^
              tab[5][(lo >> 16) & 0xff] ^ tab[4][lo >> 24] ^
              tab[3][hi & 0xff] ^ tab[2][(hi >> 8) & 0xff] ^
              tab[1][(hi >> 16) & 0xff] ^ tab[0][hi >> 24];
        p += 8;
        len -= 8;
    }
    while (len--)
        crc = tab[0][(crc ^ *p++) & 0xff] ^ (crc >> 8);
    return crc;
}

uint32_t kc_crc32c_portable(uint32_t crc, const uint8_t *buf, size_t len)
{
    ensure_tables();
    return ~slice8(crc32c_tab, ~crc, buf, len);
}


#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <nmmintrin.h>
#define KC_HAVE_HW 1
#define KC_HW_TARGET __attribute__((target("sse4.2")))
static inline KC_HW_TARGET uint32_t hw_u64(uint32_t c, uint64_t v) { return (uint32_t)_mm_crc32_u64(c, v); }
static inline KC_HW_TARGET uint32_t hw_u8(uint32_t c, uint8_t v) { return _mm_crc32_u8(c, v); }
static int hw_checked = 0, hw_ok = 0;
static int have_hw(void)
{
    if (!hw_checked) {
        __builtin_cpu_init();
        hw_ok = __builtin_cpu_supports("sse4.2");
        hw_checked = 1;
    }
    return hw_ok;
}
#elif defined(__aarch64__) && defined(__ARM_FEATURE_CRC32)
#include <arm_acle.h>
#define KC_HAVE_HW 2
#define KC_HW_TARGET
static inline uint32_t hw_u64(uint32_t c, uint64_t v) { return __crc32cd(c, v); }
static inline uint32_t hw_u8(uint32_t c, uint8_t v) { return __crc32cb(c, v); }
static int have_hw(void) { return 1; }
#endif

#ifdef KC_HAVE_HW
/* One CRC instruction has a latency of about three cycles but a throughput of
 * one per cycle, so a single dependent chain runs at a third of the
 * instruction's speed.  Long inputs are therefore cut into three adjacent
 * lanes hashed in one interleaved loop, and the lane CRCs are joined with
 * "shift" tables: shift(c, n) is the CRC state c advanced over n zero bytes,
 * which is linear in c and so a lookup per byte of c. */
#define KC_LANE_LONG 4096
#define KC_LANE_SHORT 256
static uint32_t shift_long[4][256], shift_short[4][256];
static volatile int shift_ready = 0;

static KC_HW_TARGET uint32_t hw_zeros(uint32_t c, size_t n)
{
    for (; n >= 8; n -= 8) c = hw_u64(c, 0);
    for (; n; n--) c = hw_u8(c, 0);
    return c;
}

static KC_HW_TARGET void build_shift(uint32_t tab[4][256], size_t n)
{
    for (int k = 0; k < 4; k++)
        for (uint32_t b = 0; b < 256; b++)
            tab[k][b] = hw_zeros(b << (8 * k), n);
}

static void ensure_shift(void)
{
    /* Idempotent, like ensure_tables. */
    if (!__atomic_load_n(&shift_ready, __ATOMIC_ACQUIRE)) {
        build_shift(shift_long, KC_LANE_LONG);
        build_shift(shift_short, KC_LANE_SHORT);
        __atomic_store_n(&shift_ready, 1, __ATOMIC_RELEASE);
    }
}

static inline uint32_t shift(const uint32_t tab[4][256], uint32_t c)
{
    return tab[0][c & 0xff] ^ tab[1][(c >> 8) & 0xff] ^ tab[2][(c >> 16) & 0xff] ^ tab[3][c >> 24];
}

static inline KC_HW_TARGET uint32_t lanes3(const uint32_t tab[4][256], uint32_t c, const uint8_t *p, size_t lane)
{
    uint32_t c1 = 0, c2 = 0;
    const uint8_t *end = p + lane;
    /* Each lane starts a new page, where hardware prefetchers lose the
       stream: fetch the next chunk's lanes a line at a time while this one
       is hashed (a hint: past the buffer it never faults). */
    for (; p < end; p += 64) {
        __builtin_prefetch(p + 3 * lane);
        __builtin_prefetch(p + 4 * lane);
        __builtin_prefetch(p + 5 * lane);
        for (int k = 0; k < 64; k += 8) {
            uint64_t v0, v1, v2;
            memcpy(&v0, p + k, 8);
            memcpy(&v1, p + lane + k, 8);
            memcpy(&v2, p + 2 * lane + k, 8);
            c = hw_u64(c, v0);
            c1 = hw_u64(c1, v1);
            c2 = hw_u64(c2, v2);
        }
    }
    return shift(tab, shift(tab, c) ^ c1) ^ c2;
}

static KC_HW_TARGET uint32_t crc32c_hw(uint32_t crc, const uint8_t *p, size_t len)
{
    uint32_t c = ~crc;
    while (len && ((uintptr_t)p & 7)) {
        c = hw_u8(c, *p++);
        len--;
    }
    if (len >= 3 * KC_LANE_SHORT) {
        ensure_shift();
        for (; len >= 3 * KC_LANE_LONG; p += 3 * KC_LANE_LONG, len -= 3 * KC_LANE_LONG)
            c = lanes3(shift_long, c, p, KC_LANE_LONG);
        for (; len >= 3 * KC_LANE_SHORT; p += 3 * KC_LANE_SHORT, len -= 3 * KC_LANE_SHORT)
            c = lanes3(shift_short, c, p, KC_LANE_SHORT);
    }
    for (; len >= 8; p += 8, len -= 8) {
        uint64_t v;
        memcpy(&v, p, 8);
        c = hw_u64(c, v);
    }
    while (len--)
        c = hw_u8(c, *p++);
    return ~c;
}
#endif

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && \
    (defined(__clang__) || __GNUC__ >= 8)
#include <immintrin.h>
#define KC_HAVE_VPCLMUL 1
/* Carry-less multiplication folding (Intel's "Fast CRC Computation for
 * Generic Polynomials Using PCLMULQDQ"), sixteen 128-bit lanes at a time
 * with AVX-512 VPCLMULQDQ: about three times the CRC instruction's speed on
 * inputs of a few KiB, which is where batch CRCs are.
 *
 * A 128-bit lane X, loaded little-endian, holds 16 message bytes with the
 * coefficient of x^(127-k) in bit k (the reflected order of CRC-32C).
 * Moving X forward by D bytes multiplies it by x^(8D) modulo P: with X's
 * first 8 bytes L and last 8 bytes H, X * x^(8D) = L*x^(64+8D) + H*x^(8D),
 * and in this bit order a 64x64 carry-less product carries an extra factor
 * of x, so the constants are x^(63+8D) mod P and x^(8D-1) mod P, each with
 * the coefficient of x^d in bit 63-d.  Folding keeps the lanes congruent to
 * the message, so the CRC instruction finishes the job on the last 64
 * bytes with a zero state.  tests/test_primitives.py derives these
 * constants and checks the folding against the bitwise definition. */
#define KC_FOLD_256_LO 0xe9a5d8be00000000ull /* x^(63+8*256) mod P */
#define KC_FOLD_256_HI 0x1426a81500000000ull /* x^(8*256-1) mod P */
#define KC_FOLD_64_LO 0x1c19243b00000000ull  /* x^(63+8*64) mod P */
#define KC_FOLD_64_HI 0x75bba45b00000000ull  /* x^(8*64-1) mod P */
#define KC_VP_TARGET __attribute__((target("avx512f,avx512vl,vpclmulqdq,sse4.2")))

static int vp_checked = 0, vp_ok = 0;
static int have_vpclmul(void)
{
    if (!vp_checked) {
        const char *env = getenv("KCODEC_CRC_VPCLMUL");
        __builtin_cpu_init();
        vp_ok = __builtin_cpu_supports("sse4.2") && __builtin_cpu_supports("avx512f") &&
                __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("vpclmulqdq") &&
                !(env && env[0] == '0');
        vp_checked = 1;
    }
    return vp_ok;
}

static inline KC_VP_TARGET __m512i fold512(__m512i x, __m512i k, __m512i data)
{
    /* 0x96: three-way xor */
    return _mm512_ternarylogic_epi64(_mm512_clmulepi64_epi128(x, k, 0x00),
                                     _mm512_clmulepi64_epi128(x, k, 0x11), data, 0x96);
}

/* The raw (not inverted) state c advanced over len >= 256 bytes. */
static KC_VP_TARGET uint32_t crc32c_vpclmul_raw(uint32_t c, const uint8_t *p, size_t len)
{
    const __m512i k256 = _mm512_set_epi64(KC_FOLD_256_HI, KC_FOLD_256_LO, KC_FOLD_256_HI, KC_FOLD_256_LO,
                                          KC_FOLD_256_HI, KC_FOLD_256_LO, KC_FOLD_256_HI, KC_FOLD_256_LO);
    const __m512i k64 = _mm512_set_epi64(KC_FOLD_64_HI, KC_FOLD_64_LO, KC_FOLD_64_HI, KC_FOLD_64_LO,
                                         KC_FOLD_64_HI, KC_FOLD_64_LO, KC_FOLD_64_HI, KC_FOLD_64_LO);
    uint64_t rest[8];
    /* The state enters as a xor into the first four message bytes. */
    __m512i x0 = _mm512_xor_si512(_mm512_loadu_si512((const void *)p),
                                  _mm512_zextsi128_si512(_mm_cvtsi32_si128((int)c)));
    __m512i x1 = _mm512_loadu_si512((const void *)(p + 64));
    __m512i x2 = _mm512_loadu_si512((const void *)(p + 128));
    __m512i x3 = _mm512_loadu_si512((const void *)(p + 192));
    p += 256;
    len -= 256;
    for (; len >= 256; p += 256, len -= 256) {
        x0 = fold512(x0, k256, _mm512_loadu_si512((const void *)p));
        x1 = fold512(x1, k256, _mm512_loadu_si512((const void *)(p + 64)));
        x2 = fold512(x2, k256, _mm512_loadu_si512((const void *)(p + 128)));
        x3 = fold512(x3, k256, _mm512_loadu_si512((const void *)(p + 192)));
    }
    x0 = fold512(x0, k64, x1);
    x0 = fold512(x0, k64, x2);
    x0 = fold512(x0, k64, x3);
    for (; len >= 64; p += 64, len -= 64)
        x0 = fold512(x0, k64, _mm512_loadu_si512((const void *)p));
    _mm512_storeu_si512((void *)rest, x0);
    c = 0;
    for (int i = 0; i < 8; i++)
        c = (uint32_t)_mm_crc32_u64(c, rest[i]);
    for (; len >= 8; p += 8, len -= 8) {
        uint64_t v;
        memcpy(&v, p, 8);
        c = (uint32_t)_mm_crc32_u64(c, v);
    }
    while (len--)
        c = _mm_crc32_u8(c, *p++);
    return c;
}
#endif

#ifdef KC_HAVE_VPCLMUL
/* crc32c_vpclmul_raw's folding over src while each 64-byte line is written
 * to dst with a non-temporal store: a batch of large values is then read
 * once and written once, without the cache first fetching every destination
 * line it is about to overwrite.  dst must be 64-byte aligned and len a
 * multiple of 64, at least 256. */
static KC_VP_TARGET uint32_t crc32c_copy_stream_raw(uint32_t c, uint8_t *dst, const uint8_t *src, size_t len)
{
    const __m512i k256 = _mm512_set_epi64(KC_FOLD_256_HI, KC_FOLD_256_LO, KC_FOLD_256_HI, KC_FOLD_256_LO,
                                          KC_FOLD_256_HI, KC_FOLD_256_LO, KC_FOLD_256_HI, KC_FOLD_256_LO);
    const __m512i k64 = _mm512_set_epi64(KC_FOLD_64_HI, KC_FOLD_64_LO, KC_FOLD_64_HI, KC_FOLD_64_LO,
                                         KC_FOLD_64_HI, KC_FOLD_64_LO, KC_FOLD_64_HI, KC_FOLD_64_LO);
    uint64_t rest[8];
    __m512i d0 = _mm512_loadu_si512((const void *)src);
    __m512i d1 = _mm512_loadu_si512((const void *)(src + 64));
    __m512i d2 = _mm512_loadu_si512((const void *)(src + 128));
    __m512i d3 = _mm512_loadu_si512((const void *)(src + 192));
    _mm512_stream_si512((void *)dst, d0);
    _mm512_stream_si512((void *)(dst + 64), d1);
    _mm512_stream_si512((void *)(dst + 128), d2);
    _mm512_stream_si512((void *)(dst + 192), d3);
    __m512i x0 = _mm512_xor_si512(d0, _mm512_zextsi128_si512(_mm_cvtsi32_si128((int)c)));
    __m512i x1 = d1, x2 = d2, x3 = d3;
    src += 256;
    dst += 256;
    len -= 256;
    for (; len >= 256; src += 256, dst += 256, len -= 256) {
        d0 = _mm512_loadu_si512((const void *)src);
        d1 = _mm512_loadu_si512((const void *)(src + 64));
        d2 = _mm512_loadu_si512((const void *)(src + 128));
        d3 = _mm512_loadu_si512((const void *)(src + 192));
        _mm512_stream_si512((void *)dst, d0);
        _mm512_stream_si512((void *)(dst + 64), d1);
        _mm512_stream_si512((void *)(dst + 128), d2);
        _mm512_stream_si512((void *)(dst + 192), d3);
        x0 = fold512(x0, k256, d0);
        x1 = fold512(x1, k256, d1);
        x2 = fold512(x2, k256, d2);
        x3 = fold512(x3, k256, d3);
    }
    x0 = fold512(x0, k64, x1);
    x0 = fold512(x0, k64, x2);
    x0 = fold512(x0, k64, x3);
    for (; len >= 64; src += 64, dst += 64, len -= 64) {
        d0 = _mm512_loadu_si512((const void *)src);
        _mm512_stream_si512((void *)dst, d0);
        x0 = fold512(x0, k64, d0);
    }
    /* The streamed lines reach memory in order with later stores. */
    _mm_sfence();
    _mm512_storeu_si512((void *)rest, x0);
    c = 0;
    for (int i = 0; i < 8; i++)
        c = (uint32_t)_mm_crc32_u64(c, rest[i]);
    return c;
}
#endif

/* Copies below this go through the cache: a short value is cheaper to copy
 * than to line up for streaming, and is likely read again soon. */
#define KC_COPY_STREAM_MIN 1024

uint32_t kc_crc32c_copy(uint32_t crc, uint8_t *dst, const uint8_t *src, size_t len, int stream)
{
#ifdef KC_HAVE_VPCLMUL
    if (stream && len >= KC_COPY_STREAM_MIN && have_vpclmul()) {
        size_t head = (64 - ((uintptr_t)dst & 63)) & 63, body;
        memcpy(dst, src, head);
        crc = kc_crc32c_sse42(crc, src, head);
        body = (len - head) & ~(size_t)63;
        crc = ~crc32c_copy_stream_raw(~crc, dst + head, src + head, body);
        head += body;
        memcpy(dst + head, src + head, len - head);
        return kc_crc32c_sse42(crc, src + head, len - head);
    }
#endif
    (void)stream;
    memcpy(dst, src, len);
    return kc_crc32c(crc, dst, len);
}

/* a * b modulo CRC-32C's polynomial, in the reflected bit order (bit 31 is
 * the coefficient of x^0). */
static uint32_t crc32c_mult(uint32_t a, uint32_t b)
{
    uint32_t m = 1u << 31, p = 0;
    for (;;) {
        if (a & m) {
            p ^= b;
            if ((a & (m - 1)) == 0)
                break;
        }
        m >>= 1;
        b = (b & 1) ? (b >> 1) ^ 0x82F63B78u : b >> 1;
    }
    return p;
}

uint32_t kc_crc32c_combine(uint32_t crc1, uint32_t crc2, size_t len2)
{
    /* crc1 advanced over len2 zero bytes, xor crc2 (as zlib's crc32_combine):
       multiply by x^(8 * len2), built from the squares x^(2^k). */
    uint32_t xp = 1u << 23; /* x^8: one byte */
    while (len2) {
        if (len2 & 1)
            crc1 = crc32c_mult(xp, crc1);
        xp = crc32c_mult(xp, xp);
        len2 >>= 1;
    }
    return crc1 ^ crc2;
}

/* The folding loop starts with four 64-byte accumulators; shorter inputs
 * take the CRC instruction. */
#define KC_VPCLMUL_MIN 256

uint32_t kc_crc32c_sse42(uint32_t crc, const uint8_t *buf, size_t len)
{
#ifdef KC_HAVE_HW
    if (have_hw())
        return crc32c_hw(crc, buf, len);
#endif
    return kc_crc32c_portable(crc, buf, len);
}

uint32_t kc_crc32c(uint32_t crc, const uint8_t *buf, size_t len)
{
#ifdef KC_HAVE_VPCLMUL
    if (len >= KC_VPCLMUL_MIN && have_vpclmul())
        return ~crc32c_vpclmul_raw(~crc, buf, len);
#endif
    return kc_crc32c_sse42(crc, buf, len);
}

int kc_crc32c_has_vpclmul(void)
{
#ifdef KC_HAVE_VPCLMUL
    return have_vpclmul();
#else
    return 0;
#endif
}

const char *kc_crc32c_backend(void)
{
#ifdef KC_HAVE_VPCLMUL
    if (have_vpclmul())
        return "vpclmulqdq";
#endif
#if defined(KC_HAVE_HW) && KC_HAVE_HW == 1
    if (have_hw())
        return "sse4.2";
#elif defined(KC_HAVE_HW) && KC_HAVE_HW == 2
    return "armv8-crc";
#endif
    return "portable";
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <wmmintrin.h>
#define KC_HAVE_PCLMUL 1
/* CRC-32 (gzip's, and the v0/v1 message CRC) by carry-less folding with the
 * 128-bit PCLMULQDQ every x86-64 CPU of the last decade has: the scheme of
 * the CRC-32C code below (its comment explains the constants), in four
 * 16-byte lanes for IEEE's polynomial, finished by the table over the one
 * folded lane.  java.util.zip.CRC32 is an intrinsic of the same kind, so a
 * gzip read checks its trailer at the speed Java does, not at a table's
 * 2 GB/s.  tests/test_primitives.py derives these constants too. */
#define KC_IEEE_FOLD_64_LO 0x653d982200000000ull /* x^(63+8*64) mod P */
#define KC_IEEE_FOLD_64_HI 0xcad38e8f00000000ull /* x^(8*64-1) mod P */
#define KC_IEEE_FOLD_16_LO 0x65673b4600000000ull /* x^(63+8*16) mod P */
#define KC_IEEE_FOLD_16_HI 0x9ba54c6f00000000ull /* x^(8*16-1) mod P */
#define KC_PCLMUL_TARGET __attribute__((target("pclmul,sse2")))
#define KC_PCLMUL_MIN 128

static int pclmul_checked = 0, pclmul_ok = 0;
static int have_pclmul(void)
{
    if (!pclmul_checked) {
        const char *env = getenv("KCODEC_CRC32_PCLMUL");
        __builtin_cpu_init();
        pclmul_ok = __builtin_cpu_supports("pclmul") && !(env && env[0] == '0');
        pclmul_checked = 1;
    }
    return pclmul_ok;
}

static inline KC_PCLMUL_TARGET __m128i fold128(__m128i x, __m128i k, __m128i data)
{
    return _mm_xor_si128(_mm_xor_si128(_mm_clmulepi64_si128(x, k, 0x00), _mm_clmulepi64_si128(x, k, 0x11)), data);
}

/* The raw (not inverted) state c advanced over len >= 64 bytes. */
static KC_PCLMUL_TARGET uint32_t crc32_pclmul_raw(uint32_t c, const uint8_t *p, size_t len)
{
    const __m128i k64 = _mm_set_epi64x((long long)KC_IEEE_FOLD_64_HI, (long long)KC_IEEE_FOLD_64_LO);
    const __m128i k16 = _mm_set_epi64x((long long)KC_IEEE_FOLD_16_HI, (long long)KC_IEEE_FOLD_16_LO);
    uint8_t rest[16];
    __m128i x0 = _mm_xor_si128(_mm_loadu_si128((const __m128i *)p), _mm_cvtsi32_si128((int)c));
    __m128i x1 = _mm_loadu_si128((const __m128i *)(p + 16));
    __m128i x2 = _mm_loadu_si128((const __m128i *)(p + 32));
    __m128i x3 = _mm_loadu_si128((const __m128i *)(p + 48));
    p += 64;
    len -= 64;
    for (; len >= 64; p += 64, len -= 64) {
        x0 = fold128(x0, k64, _mm_loadu_si128((const __m128i *)p));
        x1 = fold128(x1, k64, _mm_loadu_si128((const __m128i *)(p + 16)));
        x2 = fold128(x2, k64, _mm_loadu_si128((const __m128i *)(p + 32)));
        x3 = fold128(x3, k64, _mm_loadu_si128((const __m128i *)(p + 48)));
    }
    x0 = fold128(x0, k16, x1);
    x0 = fold128(x0, k16, x2);
    x0 = fold128(x0, k16, x3);
    for (; len >= 16; p += 16, len -= 16)
        x0 = fold128(x0, k16, _mm_loadu_si128((const __m128i *)p));
    _mm_storeu_si128((__m128i *)rest, x0);
    c = slice8(crc32_tab, 0, rest, 16);
    return slice8(crc32_tab, c, p, len);
}
#endif

uint32_t kc_crc32_portable(uint32_t crc, const uint8_t *buf, size_t len)
{
    ensure_tables();
    return ~slice8(crc32_tab, ~crc, buf, len);
}

uint32_t kc_crc32(uint32_t crc, const uint8_t *buf, size_t len)
{
    ensure_tables();
#ifdef KC_HAVE_PCLMUL
    if (len >= KC_PCLMUL_MIN && have_pclmul())
        return ~crc32_pclmul_raw(~crc, buf, len);
#endif
    return ~slice8(crc32_tab, ~crc, buf, len);
}

const char *kc_crc32_backend(void)
{
#ifdef KC_HAVE_PCLMUL
    if (have_pclmul())
        return "pclmulqdq";
#endif
    return "portable";
}
