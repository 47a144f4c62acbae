/*
 * kcodec native codec interface, version 1.
 *
 * A codec that wants kcodec's GIL-free paths (the batch builder, from_arrow,
 * to_arrow and the batch readers) exposes this struct through a PyCapsule
 * named KCODEC_CODEC_CAPSULE_NAME, returned by the codec object's
 * ``native_codec()`` method.  kcodec calls the functions below without the
 * GIL and without a Python call per batch.  A codec without the capsule keeps
 * working through its Python ``compress``/``decompress`` methods.
 *
 * Build against it with ``kcodec.get_include()`` on the include path:
 *     #include <kcodec/codec.h>
 *
 * Every function receives ``state`` as given in the struct.  Sizes are in
 * bytes.  ``magic`` is the message format version (0, 1 or 2) of the batch
 * being written or read, because Kafka frames some codecs differently per
 * magic (lz4's header checksum for magic 0).
 *
 * Ownership: the struct and its state must stay valid for as long as the
 * capsule object lives; kcodec keeps a reference to the capsule while it
 * uses the pointers.
 */
#ifndef KCODEC_CODEC_H
#define KCODEC_CODEC_H

#include <stdint.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define KCODEC_CODEC_CAPSULE_NAME "kcodec.native_codec.v1"
#define KCODEC_CODEC_ABI_VERSION 1

/* flags */
/* The functions may run concurrently on several threads with the same state. */
#define KCODEC_CODEC_THREAD_SAFE 0x1u

/* Return codes of compress/decompress (negative; a non-negative value is a size). */
#define KCODEC_CODEC_ERROR          (-1) /* any other failure; see the message */
#define KCODEC_CODEC_CORRUPT        (-2) /* the compressed input is not valid */
#define KCODEC_CODEC_DST_TOO_SMALL  (-3) /* the output needs more than dst_cap bytes */
#define KCODEC_CODEC_BAD_LEVEL      (-4) /* level not supported */
#define KCODEC_CODEC_BAD_MAGIC      (-5) /* this codec cannot be used with this magic */

typedef struct kcodec_codec_v1 {
    /* KCODEC_CODEC_ABI_VERSION; kcodec refuses a capsule with another value. */
    uint32_t abi_version;
    /* KCODEC_CODEC_* flags.  Without KCODEC_CODEC_THREAD_SAFE kcodec
       serialises calls into one codec. */
    uint32_t flags;
    /* Opaque pointer handed back to every function. */
    void *state;

    /* Largest compressed size of src_len input bytes at this level and magic,
       including all framing; negative on error.  kcodec allocates this much
       (plus its own headroom) before calling compress. */
    int64_t (*compress_bound)(void *state, int64_t src_len, int level, int magic);

    /* Compress src[0:src_len] into dst[0:dst_cap] in Kafka's framing for the
       magic.  Returns the number of bytes written, or a negative code.  On
       a negative code, up to err_cap bytes of a NUL-terminated message may be
       written to err (err may be NULL when err_cap is 0). */
    int64_t (*compress)(void *state, const uint8_t *src, int64_t src_len,
                        uint8_t *dst, int64_t dst_cap, int level, int magic,
                        char *err, size_t err_cap);

    /* Decompressed size of src if the framing records it, or an upper bound
       of it that the codec can fill in one call (lz4's and zstd's blocks
       give one), else -1.  May be NULL.  kcodec uses it only as a first
       guess for dst_cap and never trusts it past its own size limit. */
    int64_t (*decompressed_size)(void *state, const uint8_t *src, int64_t src_len,
                                 int magic);

    /* Decompress src[0:src_len] into dst[0:dst_cap].  Returns the number of
       bytes written; KCODEC_CODEC_DST_TOO_SMALL when the output does not fit
       (kcodec then retries with a larger dst, up to its size limit, and
       reports LimitExceededError past it); KCODEC_CODEC_CORRUPT for invalid
       input, with a message in err as for compress. */
    int64_t (*decompress)(void *state, const uint8_t *src, int64_t src_len,
                          uint8_t *dst, int64_t dst_cap, int magic,
                          char *err, size_t err_cap);
} kcodec_codec_v1;

#ifdef __cplusplus
}
#endif

#endif /* KCODEC_CODEC_H */
