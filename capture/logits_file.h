/* Full-logits side files (vt.logits/1): every logit of every run, beside a
 * capture that records the file's name and SHA-256.
 *
 * Layout, all integers little-endian:
 *   file header, 16 bytes:  "VTLOGITS" | u32 version = 1 | u32 0
 *   then one frame per run that produced logits, in the order they ran:
 *     frame header, 28 bytes: "VTLF" | u32 prompt | u32 repeat |
 *                             u32 positions | u32 vocab | u64 n_deflated
 *     n_deflated bytes: a zlib stream (RFC 1950, level 6) of positions x
 *     vocab float32 values, little-endian, position-major: the run's raw
 *     logits, whose SHA-256 is the run's logits_sha256 in the capture.
 *
 * The writer streams frames to an unnamed temporary file (hashing them on
 * the way), so that the side file is published together with its capture
 * by one vt_publish_group call. */
#ifndef VT_LOGITS_FILE_H
#define VT_LOGITS_FILE_H

#include <stdint.h>

#include "../common/vt_error.h"
#include "../provenance/provenance.h"

typedef struct vt_logits_writer vt_logits_writer;

/* The temporary data goes to an unnamed file in dir (O_TMPFILE: on the file
 * system it will be published to, gone if the process dies), or to
 * tmpfile() where dir is NULL or does not support it. */
vt_logits_writer *vt_logits_writer_new(const char *dir, vt_error *err);
int vt_logits_writer_add(vt_logits_writer *w, uint32_t prompt, uint32_t repeat, const float *logits,
                         uint32_t positions, uint32_t vocab, vt_error *err);
/* Flushes; the SHA-256 and size of the whole file. No frame may follow. */
int vt_logits_writer_finish(vt_logits_writer *w, vt_sha256_hex *sha256, uint64_t *size, vt_error *err);
/* Copies the finished file to fd (a vt_publish_item writer). */
int vt_logits_writer_copy(vt_logits_writer *w, int fd, vt_error *err);
void vt_logits_writer_free(vt_logits_writer *w);

/* Reading, for checks and tools: every frame, inflated. */
typedef struct vt_logits_frame {
    uint32_t prompt, repeat, positions, vocab;
    float *logits; /* positions x vocab */
} vt_logits_frame;

int vt_logits_file_read(const char *path, vt_logits_frame **frames, int *n_frames, vt_error *err);
void vt_logits_frames_free(vt_logits_frame *frames, int n_frames);

/* Streaming, for files too large to hold whole: frame by frame, inflating
 * only the frames asked for, hashing every byte on the way so that the
 * file can be checked against the SHA-256 its capture records.
 *   r = vt_logits_reader_open(path, err);
 *   while ((rc = vt_logits_reader_next(r, &hdr, err)) == 1)   // hdr.logits NULL
 *       if (wanted) vt_logits_reader_data(r, buf, err);       // positions x vocab
 *   vt_logits_reader_finish(r, &sha, &size, err);            // rc 0: end
 * A frame not asked for is read (for the hash) but not inflated. */
typedef struct vt_logits_reader vt_logits_reader;
vt_logits_reader *vt_logits_reader_open(const char *path, vt_error *err);
/* 1 and *hdr: the next frame; 0: end of file; -1: bad file (err set). */
int vt_logits_reader_next(vt_logits_reader *r, vt_logits_frame *hdr, vt_error *err);
/* The current frame's logits into out (hdr.positions x hdr.vocab floats). */
int vt_logits_reader_data(vt_logits_reader *r, float *out, vt_error *err);
/* Reads to the end; the SHA-256 and size of the whole file. */
int vt_logits_reader_finish(vt_logits_reader *r, vt_sha256_hex *sha256, uint64_t *size, vt_error *err);
void vt_logits_reader_close(vt_logits_reader *r);

/* The SHA-256 of n floats as little-endian float32 bytes (the run's
 * logits_sha256), whatever the host's byte order. */
int vt_logits_sha256(const float *x, size_t n, vt_sha256_hex *out);

#endif
