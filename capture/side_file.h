/* Side files of a capture (full logits, top-k log-probs): written to an
 * unnamed temporary file while the runs go, hashed on the way, then copied
 * into place when the capture is published, so that a capture and its side
 * files publish together (one vt_publish_group call) or not at all. */
#ifndef VT_SIDE_FILE_H
#define VT_SIDE_FILE_H

#include <stddef.h>
#include <stdint.h>

#include "../common/vt_error.h"
#include "../provenance/provenance.h"

typedef struct vt_side_writer vt_side_writer;

/* The temporary data goes to an unnamed file in dir (O_TMPFILE: on the file
 * system it will be published to, gone if the process dies), or to
 * tmpfile() where dir is NULL or does not support it. what names the file
 * in messages ("logits side file"). */
vt_side_writer *vt_side_writer_new(const char *dir, const char *what, vt_error *err);
int vt_side_writer_emit(vt_side_writer *w, const void *p, size_t n, vt_error *err);
/* Flushes; the SHA-256 and size of everything emitted. Nothing may follow. */
int vt_side_writer_finish(vt_side_writer *w, vt_sha256_hex *sha256, uint64_t *size, vt_error *err);
/* Copies the finished file to fd (a vt_publish_item writer). */
int vt_side_writer_copy(vt_side_writer *w, int fd, vt_error *err);
void vt_side_writer_free(vt_side_writer *w);

/* Little-endian fields, whatever the host's byte order. */
static inline void vt_le_put_u32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static inline uint32_t vt_le_get_u32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

#endif
