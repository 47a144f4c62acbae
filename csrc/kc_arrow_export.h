/* Arrow C arrays, schemas and streams over memory kcodec filled.
 *
 * Column buffers are shared, not copied: every exported array holds a
 * reference on the owner of its buffers, and the owner frees them when the
 * last array (and the Python object that made it) lets go.  Releasing never
 * needs the GIL.  Schemas made here point only at string literals, so a
 * copy of one shares its strings. */
#ifndef KC_ARROW_EXPORT_H
#define KC_ARROW_EXPORT_H
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "kc_arrow_c.h"

/* Buffers shared by arrays; destroy() frees them and the owner. */
typedef struct kc_arrow_owner {
    int64_t refs;
    void (*destroy)(struct kc_arrow_owner *);
} kc_arrow_owner_t;

static inline void kc_owner_ref(kc_arrow_owner_t *o)
{
    if (o != NULL)
        __atomic_add_fetch(&o->refs, 1, __ATOMIC_RELAXED);
}

static inline void kc_owner_unref(kc_arrow_owner_t *o)
{
    if (o != NULL && __atomic_sub_fetch(&o->refs, 1, __ATOMIC_ACQ_REL) == 0)
        o->destroy(o);
}

/* One allocation per array or schema: its buffer list (arrays), its
   children's pointers, then the children themselves. */
typedef struct {
    kc_arrow_owner_t *owner;
    const void *buffers[3];
    void *children[];
} kc_node_t;

static kc_node_t *kc_node_new(int n_children, size_t child_size)
{
    kc_node_t *p = (kc_node_t *)calloc(1, sizeof(kc_node_t) + (size_t)n_children * (sizeof(void *) + child_size));
    if (p == NULL)
        return NULL;
    char *kids = (char *)(p->children + n_children);
    for (int i = 0; i < n_children; i++)
        p->children[i] = kids + (size_t)i * child_size;
    return p;
}

static void kc_array_release(struct ArrowArray *a)
{
    kc_node_t *p = (kc_node_t *)a->private_data;
    for (int64_t i = 0; i < a->n_children; i++)
        if (a->children[i]->release != NULL)  /* a consumer may have moved a child out */
            a->children[i]->release(a->children[i]);
    kc_owner_unref(p->owner);
    free(p);
    a->release = NULL;
}

/* `a` as an array of `length` rows over up to three buffers of `owner` (a
   reference is taken; NULL for none), with `n_children` released children for
   the caller to fill.  0, or -1 without memory (`a` is then released). */
static int kc_array_init(struct ArrowArray *a, kc_arrow_owner_t *owner, int64_t length, int64_t null_count,
                         int n_buffers, const void *b0, const void *b1, const void *b2, int n_children)
{
    kc_node_t *p = kc_node_new(n_children, sizeof(struct ArrowArray));
    memset(a, 0, sizeof(*a));
    if (p == NULL)
        return -1;
    p->owner = owner;
    kc_owner_ref(owner);
    p->buffers[0] = b0;
    p->buffers[1] = b1;
    p->buffers[2] = b2;
    a->length = length;
    a->null_count = null_count;
    a->n_buffers = n_buffers;
    a->buffers = p->buffers;
    a->n_children = n_children;
    a->children = n_children ? (struct ArrowArray **)p->children : NULL;
    a->release = kc_array_release;
    a->private_data = p;
    return 0;
}

static void kc_schema_release(struct ArrowSchema *s)
{
    for (int64_t i = 0; i < s->n_children; i++)
        if (s->children[i]->release != NULL)
            s->children[i]->release(s->children[i]);
    free(s->private_data);
    s->release = NULL;
}

/* `s` as a field of type `format` (string literals, not copied) with
   `n_children` released children for the caller to fill.  0, or -1. */
static int kc_schema_init(struct ArrowSchema *s, const char *format, const char *name, int64_t flags, int n_children)
{
    kc_node_t *p = kc_node_new(n_children, sizeof(struct ArrowSchema));
    memset(s, 0, sizeof(*s));
    if (p == NULL)
        return -1;
    s->format = format;
    s->name = name;
    s->flags = flags;
    s->n_children = n_children;
    s->children = n_children ? (struct ArrowSchema **)p->children : NULL;
    s->release = kc_schema_release;
    s->private_data = p;
    return 0;
}

/* A copy of a schema made by kc_schema_init (sharing its strings).  0, or -1 (`dst` released). */
static int kc_schema_copy(const struct ArrowSchema *src, struct ArrowSchema *dst)
{
    if (kc_schema_init(dst, src->format, src->name, src->flags, (int)src->n_children) < 0)
        return -1;
    for (int64_t i = 0; i < src->n_children; i++) {
        if (kc_schema_copy(src->children[i], dst->children[i]) < 0) {
            dst->release(dst);
            return -1;
        }
    }
    return 0;
}

/* A stream of arrays made beforehand, all of one schema. */
typedef struct {
    struct ArrowSchema schema;
    struct ArrowArray *arrays;
    int64_t count;
    int64_t next;
    const char *error;
} kc_stream_private_t;

static int kc_stream_get_schema(struct ArrowArrayStream *s, struct ArrowSchema *out)
{
    kc_stream_private_t *p = (kc_stream_private_t *)s->private_data;
    if (kc_schema_copy(&p->schema, out) < 0) {
        p->error = "out of memory copying the schema";
        return ENOMEM;
    }
    return 0;
}

static int kc_stream_get_next(struct ArrowArrayStream *s, struct ArrowArray *out)
{
    kc_stream_private_t *p = (kc_stream_private_t *)s->private_data;
    if (p->next < p->count) {
        *out = p->arrays[p->next];
        p->arrays[p->next].release = NULL;  /* moved */
        p->next++;
    } else {
        memset(out, 0, sizeof(*out));  /* the end of the stream: a released array */
    }
    return 0;
}

static const char *kc_stream_get_last_error(struct ArrowArrayStream *s)
{
    return ((kc_stream_private_t *)s->private_data)->error;
}

static void kc_stream_release(struct ArrowArrayStream *s)
{
    kc_stream_private_t *p = (kc_stream_private_t *)s->private_data;
    for (int64_t i = 0; i < p->count; i++)
        if (p->arrays[i].release != NULL)
            p->arrays[i].release(&p->arrays[i]);
    if (p->schema.release != NULL)
        p->schema.release(&p->schema);
    free(p->arrays);
    free(p);
    s->release = NULL;
}

/* `s` as a stream that moves out `count` arrays (a malloc'ed list whose
   entries and the list itself it takes over) after `schema` (moved).  0, or
   -1 without memory (nothing is taken then). */
static int kc_stream_init(struct ArrowArrayStream *s, struct ArrowSchema *schema, struct ArrowArray *arrays,
                          int64_t count)
{
    kc_stream_private_t *p = (kc_stream_private_t *)calloc(1, sizeof(kc_stream_private_t));
    memset(s, 0, sizeof(*s));
    if (p == NULL)
        return -1;
    p->schema = *schema;
    schema->release = NULL;
    p->arrays = arrays;
    p->count = count;
    s->get_schema = kc_stream_get_schema;
    s->get_next = kc_stream_get_next;
    s->get_last_error = kc_stream_get_last_error;
    s->release = kc_stream_release;
    s->private_data = p;
    return 0;
}

#endif
