#include "kc_crc.h"
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

uint32_t kc_crc32(uint32_t crc, const uint8_t *buf, size_t len)
{
    ensure_tables();
    return ~slice8(crc32_tab, ~crc, buf, len);
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

uint32_t kc_crc32c(uint32_t crc, const uint8_t *buf, size_t len)
{
#ifdef KC_HAVE_HW
    if (have_hw())
        return crc32c_hw(crc, buf, len);
#endif
    return kc_crc32c_portable(crc, buf, len);
}

const char *kc_crc32c_backend(void)
{
#if defined(KC_HAVE_HW) && KC_HAVE_HW == 1
    if (have_hw())
        return "sse4.2";
#elif defined(KC_HAVE_HW) && KC_HAVE_HW == 2
    return "armv8-crc";
#endif
    return "portable";
}
