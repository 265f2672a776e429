/* Shared by the fuzz targets: a per-process scratch directory (removed at
 * exit) for readers that take a path, and a recursive remove for what a
 * target writes (an extraction) so that every run starts from nothing. */
#ifndef VT_FUZZ_UTIL_H
#define VT_FUZZ_UTIL_H

#include <fcntl.h>
#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

static char fz_dir[64];

#define FZ_UNUSED __attribute__((unused))

FZ_UNUSED static int fz_rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    remove(path);
    return 0;
}

FZ_UNUSED static void fz_rm_tree(const char *path)
{
    nftw(path, fz_rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

FZ_UNUSED static void fz_cleanup(void)
{
    if (fz_dir[0])
        fz_rm_tree(fz_dir);
}

/* dir/name in the scratch directory (a static buffer per call site kind:
 * callers copy what they keep). */
FZ_UNUSED static const char *fz_path(const char *name, char *buf, size_t cap)
{
    if (!fz_dir[0]) {
        snprintf(fz_dir, sizeof fz_dir, "/tmp/vt-fuzz-XXXXXX");
        if (!mkdtemp(fz_dir))
            abort();
        atexit(fz_cleanup);
    }
    snprintf(buf, cap, "%s/%s", fz_dir, name);
    return buf;
}

/* Writes n bytes to path (replacing it): a regular file, as every reader
 * of vt asks for. */
FZ_UNUSED static void fz_write(const char *path, const void *data, size_t n)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0)
        abort();
    const uint8_t *p = data;
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w <= 0)
            abort();
        p += w;
        n -= (size_t)w;
    }
    close(fd);
}

#ifdef VT_FUZZ_WANTS_RESEAL
#include "provenance/provenance.h"

/* A mutated capture or prefix-score document fails its seal, which the
 * reader checks after the schema, the prompts' hashes and the workload
 * seal, but before the determinism and the side-file names: given the seal
 * of its bytes (SHA-256 of what precedes ,"seal":" then "}",
 * capture/capture_read.c), it reaches those too, and whatever reads it
 * next. Anything not ending as a sealed document is left as it is. */
static void fz_reseal(char *text, size_t len)
{
    static const char member[] = ",\"seal\":\"";
    const size_t tail = 9 + 64 + 3; /* ,"seal":" HEX "}\n */
    if (len < tail || memcmp(text + len - tail, member, 9) != 0)
        return;
    size_t body = len - tail;
    char *sealed = malloc(body + 1);
    if (!sealed)
        abort();
    memcpy(sealed, text, body);
    sealed[body] = '}';
    vt_sha256_hex h;
    vt_sha256_buffer(sealed, body + 1, &h);
    memcpy(text + body + 9, h.hex, 64);
    free(sealed);
}
#endif

#ifdef VT_FUZZ_WANTS_TOKENIZER
#include "engine/tokenizer.h"

/* Qwen's vocabulary, as the models carry it: opened once per process. */
static vt_tokenizer *fz_tok;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    vt_error err;
    fz_tok = vt_tokenizer_open_file(VT_VOCAB_DIR "/ggml-vocab-qwen2.gguf", &err);
    if (!fz_tok) {
        fprintf(stderr, "%s\n", err.msg);
        abort();
    }
    return 0;
}
#endif

#endif
