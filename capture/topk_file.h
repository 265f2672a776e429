/* Top-k side files (vt.topk/1): the highest log-probs at every position of
 * every run of a capture, beside the capture, which records the file's
 * name, size and SHA-256 (capture.h, topk_file). Binary because a capture of
 * 10^4 prompts x 256 tokens holds 5 x 10^7 entries: as JSON they were 2 GB
 * to hash and parse; here they are 8 bytes each.
 *
 * Layout, all fields little-endian:
 *   header, 16 bytes: "VTTOPK\0\0" | u32 version = 1 | u32 k
 *   then, for every run with status "ok", in the order of the capture's
 *   runs, for each of its positions, k entries of 8 bytes:
 *     i32 token id | f32 log-prob
 *   highest log-prob first, equal log-probs in increasing id; the log-prob
 *   is the double log-softmax of the logits rounded to float32.
 * Runs are not framed: a run's entries start after those of the runs before
 * it (their token counts, from the capture). The size is 16 + positions x k
 * x 8 over all runs. */
#ifndef VT_TOPK_FILE_H
#define VT_TOPK_FILE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "../common/vt_error.h"
#include "../provenance/provenance.h"

#define VT_TOPK_FORMAT "vt.topk/1"
enum { VT_TOPK_HEADER = 16, VT_TOPK_ENTRY = 8 };

typedef struct vt_topk_writer vt_topk_writer;

/* Temporary data as side_file.h says (dir: where the file will go). */
vt_topk_writer *vt_topk_writer_new(const char *dir, int32_t k, vt_error *err);
/* One position: k ids and their log-probs, in the order above. */
int vt_topk_writer_add(vt_topk_writer *w, const int32_t *ids, const double *logprobs, vt_error *err);
int vt_topk_writer_finish(vt_topk_writer *w, vt_sha256_hex *sha256, uint64_t *size, vt_error *err);
int vt_topk_writer_copy(vt_topk_writer *w, int fd, vt_error *err);
void vt_topk_writer_free(vt_topk_writer *w);

/* A side file checked against what its capture says of it, kept open for
 * the few entries a comparison looks up. */
typedef struct vt_topk_file {
    int fd; /* open while k > 0 */
    int32_t k; /* 0: none */
    int64_t positions;
} vt_topk_file;

/* Reads path whole and checks it: the header (magic, version 1, k), the
 * size (16 + positions x k x 8), its SHA-256 against sha256 (hex), and
 * every entry (id in [0, n_vocab), log-prob finite and <= 0, a position's
 * entries in the order above). One pass through a buffer: each block is
 * hashed and checked while it is in cache (read(2), not mmap: on the
 * virtual machines CI runs on, hashing mapped pages costs half as much
 * again). VT_EINPUT naming the file, the byte offset or the field, and what
 * was expected; f is then closed. */
int vt_topk_file_open(const char *path, int32_t k, int64_t positions, int32_t n_vocab, const char *sha256,
                      vt_topk_file *f, vt_error *err);
/* The k entries at position pos (counted over all runs), highest first. */
int vt_topk_file_get(const vt_topk_file *f, int64_t pos, int32_t *ids, float *logprobs, vt_error *err);
void vt_topk_file_close(vt_topk_file *f);

#endif
