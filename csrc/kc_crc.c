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
__attribute__((target("sse4.2")))
static uint32_t crc32c_hw(uint32_t crc, const uint8_t *p, size_t len)
{
    uint64_t c = ~crc;
    while (len && ((uintptr_t)p & 7)) {
        c = _mm_crc32_u8((uint32_t)c, *p++);
        len--;
    }
    while (len >= 8) {
        uint64_t v;
        memcpy(&v, p, 8);
        c = _mm_crc32_u64(c, v);
        p += 8;
        len -= 8;
    }
    while (len--)
        c = _mm_crc32_u8((uint32_t)c, *p++);
    return ~(uint32_t)c;
}
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
static uint32_t crc32c_hw(uint32_t crc, const uint8_t *p, size_t len)
{
    uint32_t c = ~crc;
    while (len >= 8) {
        uint64_t v;
        memcpy(&v, p, 8);
        c = __crc32cd(c, v);
        p += 8;
        len -= 8;
    }
    while (len--)
        c = __crc32cb(c, *p++);
    return ~c;
}
static int have_hw(void) { return 1; }
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
