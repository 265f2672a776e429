/* provenance/: SHA-256 (vectors, against `openssl dgst`, serial = parallel =
 * pipelined), vt.manifest/1 (make, verify, tampering, strict reading),
 * runtime identity, wheel verification (the real pip wheel, a tampered
 * rebuild, a pip-installed copy, a rewritten script, unlisted files at any
 * depth, bytecode, links, zips whose central directory disagrees with the
 * rest) and npm verification (the pinned tarballs, a tampered loaded object,
 * a wrong lock, members outside the package, a strict package.json). */
#include <criterion/criterion.h>

#include "tests/support/vt_test.h"

#include "common/vt_json.h"
#include "provenance/provenance.h"

#include <archive.h>
#include <archive_entry.h>
#include <cjson/cJSON.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <openssl/evp.h>
#include <zlib.h>
#undef zlib_version /* provenance.h has a field of that name */

/* scripts/bootstrap's output: VT_VOCAB_DIR is <deps>/llama.cpp/models. */
#define DEPS VT_VOCAB_DIR "/../.."
#define NPM_DIR DEPS "/npm"
#define BINS_TGZ NPM_DIR "/node-llama-cpp-linux-x64-3.22.1.tgz"
#define MAIN_TGZ NPM_DIR "/node-llama-cpp-3.22.1.tgz"
#define BINS_ROOT DEPS "/linux-x64"
#define GGML_BASE BINS_ROOT "/bins/linux-x64/libggml-base.so"
#define LOCK lock_path()
#define BINS_NAME "@node-llama-cpp/linux-x64"

static char tmpdir[64];

/* The project's lock file: oracle/ next to this test's tests/ directory. */
static const char *lock_path(void)
{
    static char p[1024];
    const char *f = __FILE__, *slash = strrchr(f, '/');
    cr_assert_not_null(slash, "__FILE__ is not a path: %s", f);
    snprintf(p, sizeof p, "%.*s/../oracle/llamacpp.lock.json", (int)(slash - f), f);
    return p;
}

static void make_dir(void)
{
    snprintf(tmpdir, sizeof tmpdir, "/tmp/vt-prov-XXXXXX");
    cr_assert_not_null(mkdtemp(tmpdir));
}

static void remove_dir(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    cr_assert_eq(system(cmd), 0);
}

/* A path in this test's directory; 64 live at a time (a test uses fewer). */
static char *tpath(const char *name)
{
    static char buf[64][512];
    static int k;
    char *p = buf[k++ % 64];
    snprintf(p, 512, "%s/%s", tmpdir, name);
    return p;
}

/* Deterministic bytes (xorshift) so failures reproduce. */
static void write_random(const char *path, size_t n, uint64_t seed)
{
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f, "%s", path);
    uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
    unsigned char buf[65536];
    while (n) {
        size_t k = n < sizeof buf ? n : sizeof buf;
        for (size_t i = 0; i < k; i++) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            buf[i] = (unsigned char)(x >> 32);
        }
        cr_assert_eq(fwrite(buf, 1, k, f), k);
        n -= k;
    }
    cr_assert_eq(fclose(f), 0);
}

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f, "%s", path);
    fputs(text, f);
    cr_assert_eq(fclose(f), 0);
}

/* Flips one byte of a file in place. */
static void flip_byte(const char *path, long off)
{
    FILE *f = fopen(path, "r+b");
    cr_assert_not_null(f, "%s", path);
    cr_assert_eq(fseek(f, off, SEEK_SET), 0);
    int c = fgetc(f);
    cr_assert_neq(c, EOF);
    cr_assert_eq(fseek(f, off, SEEK_SET), 0);
    fputc(c ^ 0x20, f);
    cr_assert_eq(fclose(f), 0);
}

static int run(const char *cmd)
{
    return vt_test_exit(system(cmd), cmd, NULL);
}

static int has_line(char **lines, int n, const char *a, const char *b)
{
    for (int i = 0; i < n; i++)
        if (strstr(lines[i], a) && (!b || strstr(lines[i], b)))
            return 1;
    return 0;
}

static void dump(const vt_package_report *r)
{
    for (int i = 0; i < r->n_problems; i++)
        fprintf(stderr, "problem: %s\n", r->problems[i]);
}

/* ---- SHA-256 ---- */

Test(sha256, known_vectors)
{
    vt_sha256_hex h;
    cr_assert_eq(vt_sha256_buffer("", 0, &h), VT_OK);
    cr_assert_str_eq(h.hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    cr_assert_eq(vt_sha256_buffer("abc", 3, &h), VT_OK);
    cr_assert_str_eq(h.hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    const char *two = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    cr_assert_eq(vt_sha256_buffer(two, strlen(two), &h), VT_OK);
    cr_assert_str_eq(h.hex, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

static void openssl_sha256(const char *path, char out[65])
{
    char cmd[600];
    snprintf(cmd, sizeof cmd, "openssl dgst -sha256 -r '%s'", path);
    FILE *p = popen(cmd, "r");
    cr_assert_not_null(p);
    char line[1024] = { 0 };
    cr_assert_not_null(fgets(line, sizeof line, p), "%s gave no output", cmd);
    cr_assert_eq(pclose(p), 0, "%s", cmd);
    memcpy(out, line, 64);
    out[64] = '\0';
}

Test(sha256, file_matches_openssl_in_every_read_mode, .init = make_dir, .fini = remove_dir)
{
    /* Sizes around the buffer edges: empty, one byte, exact multiples, odd. */
    const size_t sizes[] = { 0, 1, 4096, 65536, (3u << 20) + 17, 8u << 20 };
    const vt_hash_options modes[] = {
        { 0, -1 },    /* defaults */
        { 0, 0 },     /* serial */
        { 0, 1 },     /* reader thread */
        { 4093, 1 },  /* reader thread, many odd-sized hand-offs */
        { 4096, 1 },  /* reader thread, buffer dividing the size exactly */
        { 1000, 0 },  /* serial, small reads */
    };
    for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
        char *f = tpath("data.bin");
        write_random(f, sizes[s], s + 1);
        char want[65];
        openssl_sha256(f, want);
        for (size_t m = 0; m < sizeof modes / sizeof *modes; m++) {
            vt_error err;
            vt_error_clear(&err);
            vt_sha256_hex h;
            uint64_t size = 123;
            cr_assert_eq(vt_sha256_file_opts(f, &modes[m], &h, &size, &err), VT_OK, "%s", err.msg);
            cr_assert_str_eq(h.hex, want, "size %zu mode %zu", sizes[s], m);
            cr_assert_eq(size, sizes[s]);
        }
        vt_error err;
        vt_sha256_hex h;
        cr_assert_eq(vt_sha256_file(f, &h, NULL, &err), VT_OK, "%s", err.msg);
        cr_assert_str_eq(h.hex, want);
    }
}

Test(sha256, unreadable_inputs_are_einput, .init = make_dir, .fini = remove_dir)
{
    vt_error err;
    vt_sha256_hex h;
    cr_assert_eq(vt_sha256_file(tpath("absent"), &h, NULL, &err), VT_EINPUT);
    cr_assert(strstr(err.msg, "absent") && strstr(err.msg, "No such file"), "%s", err.msg);
    cr_assert_eq(vt_sha256_file(tmpdir, &h, NULL, &err), VT_EINPUT);
    cr_assert(strstr(err.msg, tmpdir), "%s", err.msg);
}

Test(sha256, parallel_equals_serial, .init = make_dir, .fini = remove_dir)
{
    enum { N = 14 };
    const size_t sizes[N] = { 0, 1, 55, 56, 64, 1000, 4096, 65537, 1u << 20, (1u << 20) + 1, 3u << 20, 77777,
                              5u << 20, 123 };
    char names[N][512];
    const char *paths[N];
    for (int i = 0; i < N; i++) {
        char n[32];
        snprintf(n, sizeof n, "f%02d.bin", i);
        snprintf(names[i], sizeof names[i], "%s", tpath(n));
        write_random(names[i], sizes[i], 100 + (uint64_t)i);
        paths[i] = names[i];
    }
    vt_sha256_hex serial[N], par[N];
    uint64_t ssz[N], psz[N];
    vt_error err;
    for (int i = 0; i < N; i++)
        cr_assert_eq(vt_sha256_file(paths[i], &serial[i], &ssz[i], &err), VT_OK, "%s", err.msg);
    for (int threads = 1; threads <= 5; threads += 2) {
        cr_assert_eq(vt_sha256_files(paths, N, threads, par, psz, &err), VT_OK, "%s", err.msg);
        for (int i = 0; i < N; i++) {
            cr_assert_str_eq(par[i].hex, serial[i].hex, "file %d threads %d", i, threads);
            cr_assert_eq(psz[i], ssz[i]);
            cr_assert_eq(psz[i], sizes[i]);
        }
    }
    /* One unreadable file fails alone (each) or names itself (files). */
    paths[5] = tpath("missing.bin");
    int status[N];
    vt_sha256_files_each(paths, N, 0, par, psz, status);
    for (int i = 0; i < N; i++) {
        cr_assert_eq(status[i], i == 5 ? ENOENT : 0, "file %d", i);
        if (i != 5)
            cr_assert_str_eq(par[i].hex, serial[i].hex);
    }
    cr_assert_eq(par[5].hex[0], '\0');
    cr_assert_eq(vt_sha256_files(paths, N, 3, par, psz, &err), VT_EINPUT);
    cr_assert(strstr(err.msg, "missing.bin"), "%s", err.msg);
}

/* ---- manifests ---- */

static void make_model_files(void)
{
    cr_assert_eq(mkdir(tpath("models"), 0755), 0);
    write_random(tpath("models/a.gguf"), 100000, 1);
    write_random(tpath("models/b.gguf"), 4097, 2);
    write_text(tpath("models/tokenizer.json"), "{\"vocab\": []}\n");
}

Test(manifest, make_write_read_verify, .init = make_dir, .fini = remove_dir)
{
    make_model_files();
    const char *files[] = { tpath("models/a.gguf"), tpath("models/b.gguf"), tpath("models/tokenizer.json") };
    vt_error err;
    vt_manifest m, back;
    char *mpath = tpath("models/M.json");
    cr_assert_eq(vt_manifest_make_for(mpath, files, 3, &m, &err), VT_OK, "%s", err.msg);
    cr_assert_eq(m.n_files, 3);
    cr_assert_str_eq(m.files[0].name, "a.gguf");
    cr_assert_eq(m.files[0].size, 100000);
    cr_assert_eq(vt_manifest_write(&m, mpath, NULL, &err), VT_OK, "%s", err.msg);
    cr_assert_eq(vt_manifest_read(mpath, &back, &err), VT_OK, "%s", err.msg);
    cr_assert_eq(back.n_files, 3);
    for (int i = 0; i < 3; i++) {
        cr_assert_str_eq(back.files[i].name, m.files[i].name);
        cr_assert_eq(back.files[i].size, m.files[i].size);
        cr_assert_str_eq(back.files[i].sha256.hex, m.files[i].sha256.hex);
        vt_sha256_hex h;
        cr_assert_eq(vt_sha256_file(files[i], &h, NULL, &err), VT_OK);
        cr_assert_str_eq(h.hex, m.files[i].sha256.hex);
    }
    cr_assert_eq(vt_manifest_verify(&back, tpath("models"), &err), VT_OK, "%s", err.msg);
    vt_manifest_free(&back);
    vt_manifest_free(&m);

    /* A manifest in another directory names the files relative to itself. */
    cr_assert_eq(mkdir(tpath("out"), 0755), 0);
    cr_assert_eq(vt_manifest_make_for(tpath("out/M.json"), files, 3, &m, &err), VT_OK, "%s", err.msg);
    cr_assert_str_eq(m.files[1].name, "../models/b.gguf");
    cr_assert_eq(vt_manifest_verify(&m, tpath("out"), &err), VT_OK, "%s", err.msg);
    vt_manifest_free(&m);

    /* The CLI, run from elsewhere: make then verify. */
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "cd / && '%s' provenance manifest make '%s' '%s' '%s' -o '%s' >/dev/null", VT_BIN,
             files[0], files[1], files[2], tpath("out/cli.json"));
    cr_assert_eq(run(cmd), 0, "%s", cmd);
    snprintf(cmd, sizeof cmd, "'%s' provenance manifest verify '%s' >/dev/null", VT_BIN, tpath("out/cli.json"));
    cr_assert_eq(run(cmd), 0, "%s", cmd);
}

Test(manifest, one_byte_changed_is_echeck_naming_the_file, .init = make_dir, .fini = remove_dir)
{
    make_model_files();
    const char *files[] = { tpath("models/a.gguf"), tpath("models/b.gguf"), tpath("models/tokenizer.json") };
    vt_error err;
    vt_manifest m;
    cr_assert_eq(vt_manifest_make_for(tpath("models/M.json"), files, 3, &m, &err), VT_OK, "%s", err.msg);
    cr_assert_eq(vt_manifest_write(&m, tpath("models/M.json"), NULL, &err), VT_OK, "%s", err.msg);
    flip_byte(files[0], 50000);
    cr_assert_eq(vt_manifest_verify(&m, tpath("models"), &err), VT_ECHECK);
    cr_assert(strstr(err.msg, "a.gguf: sha256 differs"), "%s", err.msg);
    cr_assert_null(strstr(err.msg, "b.gguf"), "%s", err.msg);
    char **lines;
    int n = -7;
    /* Before the change: no problem, and the count says so. */
    flip_byte(files[0], 50000);
    cr_assert_eq(vt_manifest_check(&m, tpath("models"), &lines, &n, &err), VT_OK, "%s", err.msg);
    cr_assert_eq(n, 0);
    vt_prov_lines_free(lines, n);
    flip_byte(files[0], 50000);
    cr_assert_eq(vt_manifest_check(&m, tpath("models"), &lines, &n, &err), VT_ECHECK);
    cr_assert_eq(n, 1);
    cr_assert(strstr(lines[0], "a.gguf") && strstr(lines[0], m.files[0].sha256.hex), "%s", lines[0]);
    vt_prov_lines_free(lines, n);

    /* A size change and a second file: every mismatch listed. */
    FILE *f = fopen(files[1], "ab");
    fputc('x', f);
    fclose(f);
    cr_assert_eq(vt_manifest_verify(&m, tpath("models"), &err), VT_ECHECK);
    cr_assert(strstr(err.msg, "2 of 3") && strstr(err.msg, "a.gguf") && strstr(err.msg, "b.gguf: size and sha256"),
              "%s", err.msg);

    char cmd[1024];
    snprintf(cmd, sizeof cmd, "'%s' provenance manifest verify '%s' >/dev/null 2>&1", VT_BIN, tpath("models/M.json"));
    cr_assert_eq(run(cmd), 1, "%s", cmd);
    vt_manifest_free(&m);
}

Test(manifest, missing_file_is_reported, .init = make_dir, .fini = remove_dir)
{
    make_model_files();
    const char *files[] = { tpath("models/a.gguf"), tpath("models/b.gguf") };
    vt_error err;
    vt_manifest m;
    cr_assert_eq(vt_manifest_make(files, 2, &m, &err), VT_OK, "%s", err.msg);
    cr_assert_str_eq(m.files[1].name, files[1]); /* as given */
    cr_assert_eq(unlink(files[1]), 0);
    cr_assert_eq(vt_manifest_verify(&m, NULL, &err), VT_ECHECK);
    cr_assert(strstr(err.msg, "b.gguf: missing"), "%s", err.msg);
    vt_manifest_free(&m);
    /* Making a manifest of a missing file is bad input. */
    cr_assert_eq(vt_manifest_make(files, 2, &m, &err), VT_EINPUT);
    cr_assert(strstr(err.msg, "b.gguf"), "%s", err.msg);
}

static void expect_bad_manifest(const char *text, const char *needle)
{
    char *p = tpath("bad.json");
    write_text(p, text);
    vt_manifest m;
    vt_error err;
    vt_error_clear(&err);
    cr_assert_eq(vt_manifest_read(p, &m, &err), VT_EINPUT, "accepted: %s", text);
    cr_assert(strstr(err.msg, "bad.json") && strstr(err.msg, needle), "'%s' not in: %s", needle, err.msg);
    cr_assert_null(m.files);
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "'%s' provenance manifest verify '%s' >/dev/null 2>&1", VT_BIN, p);
    cr_assert_eq(run(cmd), 2, "%s", cmd);
}

#define H64 "\"0000000000000000000000000000000000000000000000000000000000000000\""

Test(manifest, malformed_is_einput_naming_the_field, .init = make_dir, .fini = remove_dir)
{
    expect_bad_manifest("{\"schema\": \"vt.manifest/1\", \"files\": [", "offset");
    expect_bad_manifest("[1, 2]", "top level");
    expect_bad_manifest("{\"files\": []}", "schema");
    expect_bad_manifest("{\"schema\": \"vt.manifest/2\", \"files\": []}", "schema");
    expect_bad_manifest("{\"schema\": \"vt.manifest/1\"}", "files");
    expect_bad_manifest("{\"schema\": \"vt.manifest/1\", \"files\": {}}", "files");
    expect_bad_manifest("{\"schema\": \"vt.manifest/1\", \"files\": [{\"name\": \"a\", \"size\": 1}]}",
                        "files[0].sha256");
    expect_bad_manifest("{\"schema\": \"vt.manifest/1\", \"files\": [{\"name\": \"a\", \"size\": 1, \"sha256\": " H64
                        "}, {\"size\": 1, \"sha256\": " H64 "}]}",
                        "files[1].name");
    expect_bad_manifest("{\"schema\": \"vt.manifest/1\", \"files\": [{\"name\": \"a\", \"size\": \"1\", \"sha256\": " H64
                        "}]}",
                        "files[0].size");
    expect_bad_manifest("{\"schema\": \"vt.manifest/1\", \"files\": [{\"name\": \"a\", \"size\": 1.5, \"sha256\": " H64
                        "}]}",
                        "files[0].size");
    expect_bad_manifest("{\"schema\": \"vt.manifest/1\", \"files\": [{\"name\": \"a\", \"size\": -1, \"sha256\": " H64
                        "}]}",
                        "files[0].size");
    expect_bad_manifest("{\"schema\": \"vt.manifest/1\", \"files\": [{\"name\": \"a\", \"size\": 1, \"sha256\": "
                        "\"ABC\"}]}",
                        "files[0].sha256");
    expect_bad_manifest("{\"schema\": \"vt.manifest/1\", \"files\": [{\"name\": \"a\", \"size\": 1, \"sha256\": " H64
                        ", \"sha256\": " H64 "}]}",
                        "twice");
    expect_bad_manifest("{\"schema\": \"vt.manifest/1\", \"files\": [{\"name\": 7, \"size\": 1, \"sha256\": " H64 "}]}",
                        "files[0].name");
    vt_manifest m;
    vt_error err;
    cr_assert_eq(vt_manifest_read(tpath("nope.json"), &m, &err), VT_EINPUT);
    cr_assert(strstr(err.msg, "nope.json"), "%s", err.msg);
}

/* ---- strict JSON in manifests (common/vt_json.h) ---- */

static void write_bytes(const char *path, const void *data, size_t n)
{
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f, "%s", path);
    cr_assert_eq(fwrite(data, 1, n, f), n);
    cr_assert_eq(fclose(f), 0);
}

/* A manifest of one file named `name` (JSON-escaped as given) in models/,
 * holding that file's real size and sha256; `tail` (n_tail bytes) follows. */
static char *manifest_text(const char *name_json, const char *file, const char *tail, size_t n_tail, size_t *len)
{
    vt_sha256_hex h;
    uint64_t size;
    vt_error err;
    cr_assert_eq(vt_sha256_file(file, &h, &size, &err), VT_OK, "%s", err.msg);
    static char buf[1024];
    int n = snprintf(buf, sizeof buf,
                     "{\"schema\": \"vt.manifest/1\", \"files\": [{\"name\": \"%s\", \"size\": %llu, \"sha256\": "
                     "\"%s\"}]}\n",
                     name_json, (unsigned long long)size, h.hex);
    cr_assert(n > 0 && (size_t)n + n_tail < sizeof buf);
    memcpy(buf + n, tail, n_tail);
    *len = (size_t)n + n_tail;
    return buf;
}

/* `vt provenance manifest verify M`: its exit code; stderr's text in *msg. */
static int verify_cli(const char *manifest, char *msg, size_t cap)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "'%s' provenance manifest verify '%s' >/dev/null 2>'%s'", VT_BIN, manifest,
             tpath("stderr.txt"));
    int rc = run(cmd);
    FILE *f = fopen(tpath("stderr.txt"), "rb");
    cr_assert_not_null(f);
    size_t n = fread(msg, 1, cap - 1, f);
    fclose(f);
    msg[n] = '\0';
    return rc;
}

/* Refused: exit 2 and one line naming the manifest and each needle. */
static void expect_manifest_refused(const char *text, size_t len, const char *n1, const char *n2)
{
    char *mp = tpath("models/M.json");
    write_bytes(mp, text, len);
    vt_manifest m;
    vt_error err;
    vt_error_clear(&err);
    cr_assert_eq(vt_manifest_read(mp, &m, &err), VT_EINPUT, "accepted: %.*s", (int)len, text);
    cr_assert(strstr(err.msg, "M.json: offset ") && strstr(err.msg, n1) && (!n2 || strstr(err.msg, n2)), "%s",
              err.msg);
    char msg[2048];
    cr_assert_eq(verify_cli(mp, msg, sizeof msg), 2, "%s", msg);
    cr_assert(strstr(msg, "M.json: offset ") && strstr(msg, n1), "%s", msg);
    cr_assert(strchr(msg, '\n') == msg + strlen(msg) - 1, "not one line: %s", msg);
}

static void expect_manifest_verifies(const char *text, size_t len)
{
    char *mp = tpath("models/M.json");
    write_bytes(mp, text, len);
    char msg[2048];
    cr_assert_eq(verify_cli(mp, msg, sizeof msg), 0, "%.*s: %s", (int)len, text, msg);
}

Test(manifest, nul_escape_in_a_name_is_refused, .init = make_dir, .fini = remove_dir)
{
    /* cJSON alone reads "model.gguf\u0000.evil" as "model.gguf": the entry
     * would verify the real model under a name that is not its own. */
    cr_assert_eq(mkdir(tpath("models"), 0755), 0);
    char *model = tpath("models/model.gguf");
    write_random(model, 5000, 3);
    size_t len;
    char *text = manifest_text("model.gguf\\u0000.evil", model, "", 0, &len);
    expect_manifest_refused(text, len, "offset 58: field files[0].name: expected a string without a \\u0000 escape",
                            NULL);
    /* The same manifest without the defect verifies. */
    text = manifest_text("model.gguf", model, "", 0, &len);
    expect_manifest_verifies(text, len);
}

Test(manifest, anything_after_the_document_is_refused, .init = make_dir, .fini = remove_dir)
{
    cr_assert_eq(mkdir(tpath("models"), 0755), 0);
    char *model = tpath("models/model.gguf");
    write_random(model, 5000, 4);
    size_t len;
    /* A second object: one reader sees the first, another the last. */
    const char second[] = "{\"schema\": \"vt.manifest/1\", \"files\": []}\n";
    char *text = manifest_text("model.gguf", model, second, sizeof second - 1, &len);
    expect_manifest_refused(text, len, "expected only whitespace after the JSON document", NULL);
    text = manifest_text("model.gguf", model, "\0", 1, &len);
    expect_manifest_refused(text, len, "expected only whitespace after the JSON document (found a NUL byte)", NULL);
    text = manifest_text("model.gguf", model, "garbage", 7, &len);
    expect_manifest_refused(text, len, "expected only whitespace", NULL);
    text = manifest_text("model.gguf", model, " \n\t\r\n", 5, &len);
    expect_manifest_verifies(text, len);
}

Test(manifest, escaped_backslash_then_u0000_is_a_literal_name, .init = make_dir, .fini = remove_dir)
{
    /* JSON "a\\u0000": a backslash, then the six characters u0000. A file
     * may be named so, and its manifest entry means exactly that name. */
    cr_assert_eq(mkdir(tpath("models"), 0755), 0);
    char *model = tpath("models/model\\u0000.gguf");
    write_random(model, 5000, 5);
    size_t len;
    char *text = manifest_text("model\\\\u0000.gguf", model, "", 0, &len);
    write_bytes(tpath("models/M.json"), text, len);
    vt_manifest m;
    vt_error err;
    cr_assert_eq(vt_manifest_read(tpath("models/M.json"), &m, &err), VT_OK, "%s", err.msg);
    cr_assert_str_eq(m.files[0].name, "model\\u0000.gguf");
    vt_manifest_free(&m);
    expect_manifest_verifies(text, len);
}

/* ---- runtime identity ---- */

/* The hash of a mapped object named path in id, or NULL. */
static const char *object_sha(const vt_runtime_identity *id, const char *path)
{
    for (int i = 0; i < id->n_objects; i++)
        if (strcmp(id->objects[i].path, path) == 0)
            return id->objects[i].sha256.hex;
    return NULL;
}

/* The identity's hash of the object at path: what the file holds now. */
static void expect_object_hashed_as_file(const char *path, char out[65])
{
    vt_runtime_identity id;
    vt_error err;
    cr_assert_eq(vt_runtime_identity_read(&id, &err), VT_OK, "%s", err.msg);
    const char *got = object_sha(&id, path);
    cr_assert_not_null(got, "%s not among the %d mapped objects", path, id.n_objects);
    vt_sha256_hex h;
    cr_assert_eq(vt_sha256_file(path, &h, NULL, &err), VT_OK, "%s", err.msg);
    cr_assert_str_eq(got, h.hex, "%s: the identity's hash is not the file's", path);
    snprintf(out, 65, "%s", got);
    vt_runtime_identity_free(&id);
}

/* runtime.c hashes a file once a process while stat says it is the same
 * file; a file changed since (same size, other bytes; or longer) is hashed
 * again, never answered from what it held. */
Test(runtime, a_changed_object_is_hashed_again, .init = make_dir, .fini = remove_dir)
{
    char src[600];
    snprintf(src, sizeof src, "%s/libplugin_ok.so", VT_FAKE_GPU_DIR);
    size_t len;
    char *bytes = vt_test_slurp(src, &len);
    cr_assert_not_null(bytes, "%s", src);
    char lib[256];
    snprintf(lib, sizeof lib, "%s", tpath("libcopy.so"));
    write_bytes(lib, bytes, len);
    void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    cr_assert_not_null(h, "%s", dlerror());

    char first[65], again[65], changed[65], longer[65];
    expect_object_hashed_as_file(lib, first);
    expect_object_hashed_as_file(lib, again);
    cr_assert_str_eq(first, again);
    /* The last byte is in the section header table, which the loader does
     * not read after loading. */
    int fd = open(lib, O_WRONLY);
    cr_assert_geq(fd, 0);
    char last = (char)(bytes[len - 1] ^ 0x5a);
    cr_assert_eq(pwrite(fd, &last, 1, (off_t)len - 1), 1);
    expect_object_hashed_as_file(lib, changed);
    cr_assert_str_neq(changed, first, "same size, other bytes: the old hash was given");
    cr_assert_eq(pwrite(fd, "x", 1, (off_t)len), 1);
    close(fd);
    expect_object_hashed_as_file(lib, longer);
    cr_assert_str_neq(longer, changed, "a byte longer: the old hash was given");
    dlclose(h);
    free(bytes);
}

Test(runtime, identity_resolved_and_binary_hash_matches)
{
    vt_runtime_identity id;
    vt_error err;
    cr_assert_eq(vt_runtime_identity_read(&id, &err), VT_OK, "%s", err.msg);
    cr_assert_eq(id.resolved, 1, "unresolved: %s", id.unresolved ? id.unresolved : "");
    cr_assert_null(id.unresolved);
    const char *fields[] = { id.binary_path, id.openssl_version, id.libarchive_version, id.zlib_version,
                             id.cjson_version, id.pcre2_version, id.cpu_model, id.cpu_flags, id.kernel, id.machine };
    for (size_t i = 0; i < sizeof fields / sizeof *fields; i++)
        cr_assert(fields[i] && fields[i][0], "field %zu empty", i);
    cr_assert(strstr(id.openssl_version, "OpenSSL"), "%s", id.openssl_version);
    cr_assert(strstr(id.libarchive_version, "libarchive"), "%s", id.libarchive_version);
    /* The CPU model is /proc/cpuinfo's value as the file gives it after the
     * colon and its blanks (read here independently), nothing around it. */
    FILE *ci = fopen("/proc/cpuinfo", "r");
    cr_assert_not_null(ci);
    char line[1024], want[1024] = "";
    while (!want[0] && fgets(line, sizeof line, ci)) {
        static const char *const keys[] = { "model name", "Processor", "cpu model", "uarch" };
        for (size_t k = 0; k < 4 && !want[0]; k++) {
            size_t kl = strlen(keys[k]);
            if (strncmp(line, keys[k], kl) == 0 && strchr(" \t:", line[kl])) {
                const char *v = strchr(line, ':') + 1;
                v += strspn(v, " \t");
                snprintf(want, sizeof want, "%.*s", (int)strcspn(v, "\n"), v);
            }
        }
    }
    fclose(ci);
    cr_assert(want[0], "no model line in /proc/cpuinfo");
    cr_assert_str_eq(id.cpu_model, want);
    cr_assert_gt(id.n_cores, 0);
    cr_assert_gt(id.n_cores_usable, 0);
    cr_assert_eq(strlen(id.binary_sha256.hex), 64);

    vt_sha256_hex h;
    uint64_t size;
    cr_assert_eq(vt_sha256_file(id.binary_path, &h, &size, &err), VT_OK, "%s", err.msg);
    cr_assert_str_eq(id.binary_sha256.hex, h.hex);
    cr_assert_eq(id.binary_size, size);

    /* This test links libcrypto dynamically: it is among the objects, hashed. */
    int crypto = 0;
    for (int i = 0; i < id.n_objects; i++) {
        cr_assert_eq(strlen(id.objects[i].sha256.hex), 64, "%s", id.objects[i].path);
        for (int k = 0; k < i; k++)
            cr_assert_str_neq(id.objects[i].path, id.objects[k].path);
        if (strstr(id.objects[i].path, "libcrypto.so")) {
            crypto = 1;
            cr_assert_eq(vt_sha256_file(id.objects[i].path, &h, &size, &err), VT_OK);
            cr_assert_str_eq(id.objects[i].sha256.hex, h.hex);
            cr_assert_eq(id.objects[i].size, size);
        }
    }
    cr_assert(crypto, "libcrypto not among %d mapped objects", id.n_objects);

    char *json = vt_runtime_identity_to_json(&id);
    cr_assert_not_null(json);
    cJSON *j = cJSON_Parse(json);
    cr_assert_not_null(j, "%s", json);
    cr_assert(cJSON_IsTrue(cJSON_GetObjectItem(j, "resolved")));
    cr_assert_str_eq(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "binary"), "sha256")->valuestring,
                     id.binary_sha256.hex);
    cr_assert_eq(cJSON_GetArraySize(cJSON_GetObjectItem(j, "objects")), id.n_objects);
    cJSON_Delete(j);
    free(json);
    vt_runtime_identity_free(&id);

    char cmd[600];
    snprintf(cmd, sizeof cmd, "'%s' provenance identity --json | grep -q '\"resolved\": true'", VT_BIN);
    cr_assert_eq(run(cmd), 0, "%s", cmd);
}

/* ---- wheels ---- */

static void find_wheel(const char *pattern, char *out, size_t cap)
{
    glob_t g;
    cr_assert_eq(glob(pattern, 0, NULL, &g), 0, "no %s (scripts/bootstrap installs python3-pip-whl)", pattern);
    snprintf(out, cap, "%s", g.gl_pathv[g.gl_pathc - 1]);
    globfree(&g);
}

typedef struct zmember {
    const char *name;
    const char *data;
    size_t len;
} zmember;

static void zip_add(struct archive *w, const char *name, const void *data, size_t len, int mode)
{
    struct archive_entry *e = archive_entry_new();
    archive_entry_set_pathname(e, name);
    archive_entry_set_filetype(e, AE_IFREG);
    archive_entry_set_perm(e, mode);
    archive_entry_set_size(e, (la_int64_t)len);
    archive_entry_set_mtime(e, 1700000000, 0);
    cr_assert_eq(archive_write_header(w, e), ARCHIVE_OK, "%s", archive_error_string(w));
    if (len)
        cr_assert_eq(archive_write_data(w, data, len), (la_ssize_t)len, "%s", archive_error_string(w));
    archive_entry_free(e);
}

static struct archive *zip_open_write(const char *path)
{
    struct archive *w = archive_write_new();
    cr_assert_eq(archive_write_set_format_zip(w), ARCHIVE_OK);
    cr_assert_eq(archive_write_open_filename(w, path), ARCHIVE_OK, "%s", archive_error_string(w));
    return w;
}

/* Copies the wheel src to dst with libarchive; the member named `tamper`
 * gets one byte changed, `drop` is left out and `extra` added. */
static void rebuild_wheel(const char *src, const char *dst, const char *tamper, const char *drop, const char *extra)
{
    struct archive *r = archive_read_new();
    archive_read_support_format_zip(r);
    cr_assert_eq(archive_read_open_filename(r, src, 1 << 16), ARCHIVE_OK);
    struct archive *w = zip_open_write(dst);
    struct archive_entry *e;
    int tampered = 0;
    while (archive_read_next_header(r, &e) == ARCHIVE_OK) {
        const char *name = archive_entry_pathname(e);
        if (archive_entry_filetype(e) != AE_IFREG || (drop && strcmp(name, drop) == 0))
            continue;
        size_t cap = 1 << 16, n = 0;
        char *buf = malloc(cap);
        la_ssize_t k;
        while ((k = archive_read_data(r, buf + n, cap - n)) > 0) {
            n += (size_t)k;
            if (n == cap)
                buf = realloc(buf, cap *= 2);
        }
        cr_assert_geq(k, 0);
        if (tamper && strcmp(name, tamper) == 0 && n) {
            buf[n / 2] ^= 0x01;
            tampered = 1;
        }
        zip_add(w, name, buf, n, 0644);
        free(buf);
    }
    if (extra)
        zip_add(w, extra, "print('extra')\n", 15, 0644);
    cr_assert_eq(archive_write_close(w), ARCHIVE_OK);
    archive_write_free(w);
    archive_read_free(r);
    cr_assert(!tamper || tampered, "member %s not found", tamper);
}

Test(wheel, real_pip_wheel_verifies)
{
    char whl[512];
    find_wheel("/usr/share/python-wheels/pip-*.whl", whl, sizeof whl);
    vt_package_report r;
    vt_error err;
    cr_assert_eq(vt_package_verify_wheel(whl, NULL, &r, &err), VT_OK, "%s", err.msg);
    dump(&r);
    cr_assert(r.verified);
    cr_assert_eq(r.n_problems, 0);
    cr_assert_gt(r.members_checked, 400);
    cr_assert_str_eq(r.kind, "wheel");
    vt_sha256_hex h;
    cr_assert_eq(vt_sha256_file(whl, &h, NULL, &err), VT_OK);
    cr_assert_str_eq(r.sha256.hex, h.hex);
    vt_package_report_free(&r);

    char cmd[700];
    snprintf(cmd, sizeof cmd, "'%s' provenance verify-wheel '%s' >/dev/null", VT_BIN, whl);
    cr_assert_eq(run(cmd), 0, "%s", cmd);
    find_wheel("/usr/share/python-wheels/setuptools-*.whl", whl, sizeof whl);
    cr_assert_eq(vt_package_verify_wheel(whl, NULL, &r, &err), VT_OK, "%s", err.msg);
    dump(&r);
    cr_assert(r.verified);
    vt_package_report_free(&r);
}

Test(wheel, tampered_member_is_named, .init = make_dir, .fini = remove_dir)
{
    char whl[512];
    find_wheel("/usr/share/python-wheels/pip-*.whl", whl, sizeof whl);
    char *copy = tpath("pip-copy-py3-none-any.whl");
    vt_package_report r;
    vt_error err;

    /* An untouched rebuild still verifies: the check is on member bytes. */
    rebuild_wheel(whl, copy, NULL, NULL, NULL);
    cr_assert_eq(vt_package_verify_wheel(copy, NULL, &r, &err), VT_OK, "%s", err.msg);
    dump(&r);
    cr_assert(r.verified);
    int all = r.members_checked;
    vt_package_report_free(&r);

    rebuild_wheel(whl, copy, "pip/_internal/cli/main.py", NULL, NULL);
    cr_assert_eq(vt_package_verify_wheel(copy, NULL, &r, &err), VT_OK, "%s", err.msg);
    cr_assert_not(r.verified);
    cr_assert_eq(r.n_problems, 1);
    cr_assert(strstr(r.problems[0], "pip/_internal/cli/main.py") && strstr(r.problems[0], "RECORD says"), "%s",
              r.problems[0]);
    cr_assert_eq(r.members_checked, all - 1);
    vt_package_report_free(&r);
    char cmd[700];
    snprintf(cmd, sizeof cmd, "'%s' provenance verify-wheel '%s' >/dev/null 2>&1", VT_BIN, copy);
    cr_assert_eq(run(cmd), 1, "%s", cmd);

    /* A member RECORD does not list, and a listed member removed. */
    rebuild_wheel(whl, copy, NULL, "pip/__main__.py", "pip/_evil.py");
    cr_assert_eq(vt_package_verify_wheel(copy, NULL, &r, &err), VT_OK, "%s", err.msg);
    cr_assert_not(r.verified);
    cr_assert(has_line(r.problems, r.n_problems, "pip/_evil.py", "not listed in RECORD"));
    cr_assert(has_line(r.problems, r.n_problems, "pip/__main__.py", "not in the wheel"));
    cr_assert_eq(r.n_problems, 2);
    vt_package_report_free(&r);

    /* Not a wheel at all: bad input. */
    write_text(tpath("junk.whl"), "not a zip");
    cr_assert_eq(vt_package_verify_wheel(tpath("junk.whl"), NULL, &r, &err), VT_EINPUT);
    cr_assert(strstr(err.msg, "junk.whl"), "%s", err.msg);
    snprintf(cmd, sizeof cmd, "'%s' provenance verify-wheel '%s' >/dev/null 2>&1", VT_BIN, tpath("junk.whl"));
    cr_assert_eq(run(cmd), 2, "%s", cmd);
}

/* pip from its own wheel (as Debian ships it), into a --target directory. */
static void pip_install(const char *wheel, const char *target)
{
    char pipwhl[512];
    find_wheel("/usr/share/python-wheels/pip-*.whl", pipwhl, sizeof pipwhl);
    char cmd[2048];
    snprintf(cmd, sizeof cmd,
             "PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INPUT=1 python3 '%s/pip' install --no-index --no-deps "
             "--no-cache-dir --quiet --target '%s' '%s' >'%s/pip.log' 2>&1",
             pipwhl, target, wheel, tmpdir);
    cr_assert_eq(run(cmd), 0, "%s (see %s/pip.log)", cmd, tmpdir);
}

Test(wheel, installed_copy_verifies_and_tampering_is_named, .init = make_dir, .fini = remove_dir, .timeout = 600)
{
    char whl[512];
    find_wheel("/usr/share/python-wheels/pip-*.whl", whl, sizeof whl);
    char *target = tpath("site");
    pip_install(whl, target);
    vt_package_report r;
    vt_error err;
    cr_assert_eq(vt_package_verify_wheel(whl, target, &r, &err), VT_OK, "%s", err.msg);
    dump(&r);
    cr_assert(r.verified);
    cr_assert_gt(r.installed_checked, 400);
    /* pip's console scripts are generated from entry_points.txt. */
    cr_assert(has_line(r.notes, r.n_notes, "bin/pip", "entry-point script"));
    vt_package_report_free(&r);

    char cmd[1024];
    snprintf(cmd, sizeof cmd, "'%s' provenance verify-wheel '%s' --installed '%s' >/dev/null", VT_BIN, whl, target);
    cr_assert_eq(run(cmd), 0, "%s", cmd);

    flip_byte(tpath("site/pip/_internal/cli/main.py"), 100);
    write_text(tpath("site/pip/_internal/sneaky.py"), "import os\n");
    cr_assert_eq(vt_package_verify_wheel(whl, target, &r, &err), VT_OK, "%s", err.msg);
    cr_assert_not(r.verified);
    cr_assert(has_line(r.problems, r.n_problems, "pip/_internal/cli/main.py", "modified after install"));
    cr_assert(has_line(r.problems, r.n_problems, "pip/_internal/sneaky.py", "not in the installed RECORD"));
    cr_assert_eq(r.n_problems, 2);
    vt_package_report_free(&r);
    cr_assert_eq(run(cmd), 1, "%s", cmd);
}

/* URL-safe unpadded base64 of a SHA-256 given in hex, as RECORD wants it. */
static void record_hash(const void *data, size_t len, char *out)
{
    vt_sha256_hex h;
    cr_assert_eq(vt_sha256_buffer(data, len, &h), VT_OK);
    unsigned char d[32];
    for (int i = 0; i < 32; i++) {
        unsigned v;
        sscanf(h.hex + 2 * i, "%2x", &v);
        d[i] = (unsigned char)v;
    }
    static const char abc[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    int o = 0;
    for (int i = 0; i < 32; i += 3) {
        uint32_t v = (uint32_t)d[i] << 16 | (i + 1 < 32 ? d[i + 1] << 8 : 0) | (i + 2 < 32 ? d[i + 2] : 0);
        int n = i + 2 < 32 ? 4 : 3; /* 32 = 10*3 + 2: last group has 3 digits */
        for (int k = 0; k < n; k++)
            out[o++] = abc[v >> (18 - 6 * k) & 63];
    }
    out[o] = '\0';
}

enum { DEMO_MEMBERS = 5 };

/* A small wheel with a "#!python" script in .data/scripts/, which
 * installers rewrite to the real interpreter; its path. */
static char *demo_wheel(void)
{
    zmember mem[] = {
        { "vtdemo/__init__.py", "VALUE = 42\n", 0 },
        { "vtdemo/data,with comma.txt", "RECORD quotes this name\n", 0 }, /* CSV quoting */
        { "vtdemo-1.0.data/scripts/vtdemo-tool", "#!python\nimport vtdemo\nprint(vtdemo.VALUE)\n", 0 },
        { "vtdemo-1.0.dist-info/METADATA", "Metadata-Version: 2.1\nName: vtdemo\nVersion: 1.0\n", 0 },
        { "vtdemo-1.0.dist-info/WHEEL",
          "Wheel-Version: 1.0\nGenerator: vt-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n", 0 },
    };
    enum { NM = sizeof mem / sizeof *mem };
    _Static_assert((int)NM == (int)DEMO_MEMBERS, "DEMO_MEMBERS counts mem[]");
    char record[4096] = "";
    for (int i = 0; i < NM; i++) {
        mem[i].len = strlen(mem[i].data);
        char h[64];
        record_hash(mem[i].data, mem[i].len, h);
        const char *q = strchr(mem[i].name, ',') ? "\"" : "";
        snprintf(record + strlen(record), sizeof record - strlen(record), "%s%s%s,sha256=%s,%zu\n", q, mem[i].name,
                 q, h, mem[i].len);
    }
    strcat(record, "vtdemo-1.0.dist-info/RECORD,,\n");
    char *whl = tpath("vtdemo-1.0-py3-none-any.whl");
    struct archive *w = zip_open_write(whl);
    for (int i = 0; i < NM; i++)
        zip_add(w, mem[i].name, mem[i].data, mem[i].len, strstr(mem[i].name, "scripts/") ? 0755 : 0644);
    zip_add(w, "vtdemo-1.0.dist-info/RECORD", record, strlen(record), 0644);
    cr_assert_eq(archive_write_close(w), ARCHIVE_OK);
    archive_write_free(w);
    return whl;
}

Test(wheel, rewritten_script_is_a_note_not_tampering, .init = make_dir, .fini = remove_dir, .timeout = 600)
{
    char *whl = demo_wheel();
    enum { NM = DEMO_MEMBERS };
    vt_package_report r;
    vt_error err;
    cr_assert_eq(vt_package_verify_wheel(whl, NULL, &r, &err), VT_OK, "%s", err.msg);
    dump(&r);
    cr_assert(r.verified);
    cr_assert_eq(r.members_checked, NM);
    vt_package_report_free(&r);

    char *target = tpath("site");
    pip_install(whl, target);
    cr_assert_eq(vt_package_verify_wheel(whl, target, &r, &err), VT_OK, "%s", err.msg);
    dump(&r);
    cr_assert(r.verified);
    cr_assert(has_line(r.notes, r.n_notes, "bin/vtdemo-tool", "rewritten script"));
    vt_package_report_free(&r);

    /* The script changed beyond its first line: that is tampering. Keep the
     * installed RECORD in step so only the wheel comparison can see it. */
    char *script = tpath("site/bin/vtdemo-tool");
    FILE *f = fopen(script, "rb");
    cr_assert_not_null(f);
    char body[4096];
    size_t n = fread(body, 1, sizeof body - 1, f);
    fclose(f);
    body[n] = '\0';
    char *p = strstr(body, "VALUE");
    cr_assert_not_null(p);
    p[0] = 'W';
    write_text(script, body);
    char oldh[64], newh[64];
    p[0] = 'V';
    record_hash(body, n, oldh);
    p[0] = 'W';
    record_hash(body, n, newh);
    char sed[1024];
    snprintf(sed, sizeof sed, "sed -i 's/%s/%s/' '%s'", oldh, newh, tpath("site/vtdemo-1.0.dist-info/RECORD"));
    cr_assert_eq(run(sed), 0);
    cr_assert_eq(vt_package_verify_wheel(whl, target, &r, &err), VT_OK, "%s", err.msg);
    cr_assert_not(r.verified);
    cr_assert(has_line(r.problems, r.n_problems, "bin/vtdemo-tool", "beyond the rewritable shebang"));
    vt_package_report_free(&r);
}

static void copy_file(const char *from, const char *to)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "cp '%s' '%s'", from, to);
    cr_assert_eq(run(cmd), 0, "%s", cmd);
}

/* The demo wheel installed by pip into site/: verified, no problem. */
static char *installed_demo(void)
{
    char *whl = demo_wheel();
    pip_install(whl, tpath("site"));
    vt_package_report r;
    vt_error err;
    cr_assert_eq(vt_package_verify_wheel(whl, tpath("site"), &r, &err), VT_OK, "%s", err.msg);
    dump(&r);
    cr_assert(r.verified);
    vt_package_report_free(&r);
    return whl;
}

/* Verifies the installed demo; expects exactly one problem, holding a and b. */
static void expect_one_installed_problem(const char *whl, const char *a, const char *b)
{
    vt_package_report r;
    vt_error err;
    cr_assert_eq(vt_package_verify_wheel(whl, tpath("site"), &r, &err), VT_OK, "%s", err.msg);
    dump(&r);
    cr_assert_not(r.verified);
    cr_assert_eq(r.n_problems, 1);
    cr_assert(strstr(r.problems[0], a) && (!b || strstr(r.problems[0], b)), "%s", r.problems[0]);
    cr_assert_null(strchr(r.problems[0], '\n'));
    vt_package_report_free(&r);
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "'%s' provenance verify-wheel '%s' --installed '%s' >/dev/null 2>&1", VT_BIN, whl,
             tpath("site"));
    cr_assert_eq(run(cmd), 1, "%s", cmd);
}

static void expect_installed_verifies(const char *whl)
{
    vt_package_report r;
    vt_error err;
    cr_assert_eq(vt_package_verify_wheel(whl, tpath("site"), &r, &err), VT_OK, "%s", err.msg);
    dump(&r);
    cr_assert(r.verified);
    vt_package_report_free(&r);
}

Test(wheel, installed_tree_is_walked_at_any_depth, .init = make_dir, .fini = remove_dir, .timeout = 600)
{
    char *whl = installed_demo();
    /* 200 directories down in the package: a file RECORD does not list. */
    static char path[2048];
    int n = snprintf(path, sizeof path, "%s", tpath("site/vtdemo"));
    for (int i = 0; i < 200; i++) {
        n += snprintf(path + n, sizeof path - (size_t)n, "/d");
        cr_assert_eq(mkdir(path, 0755), 0, "%s", path);
    }
    snprintf(path + n, sizeof path - (size_t)n, "/evil.py");
    write_text(path, "import os\n");
    char want[1024] = "vtdemo";
    for (int i = 0; i < 200; i++)
        strcat(want, "/d");
    strcat(want, "/evil.py: on disk in an installed package directory but not in the installed RECORD");
    expect_one_installed_problem(whl, want, NULL);
    cr_assert_eq(unlink(path), 0);
    expect_installed_verifies(whl); /* the empty directories hold nothing unlisted */
}

Test(wheel, unlisted_bytecode_is_refused, .init = make_dir, .fini = remove_dir, .timeout = 600)
{
    char *whl = installed_demo();
    char *pyc = tpath("site/vtdemo/__pycache__/x.cpython-311.pyc");
    write_text(pyc, "not what any source compiles to");
    expect_one_installed_problem(whl, "vtdemo/__pycache__/x.cpython-311.pyc: bytecode", "not in the installed RECORD");
    cr_assert_eq(unlink(pyc), 0);
    expect_installed_verifies(whl);
}

Test(wheel, symbolic_links_in_the_installed_tree_are_refused, .init = make_dir, .fini = remove_dir, .timeout = 600)
{
    char *whl = installed_demo();
    /* A link RECORD does not list, pointing out of the tree: reported, not followed. */
    char *link = tpath("site/vtdemo/extra.py");
    cr_assert_eq(symlink("/etc/hostname", link), 0);
    expect_one_installed_problem(whl, "vtdemo/extra.py: a symbolic link", "not followed");
    cr_assert_eq(unlink(link), 0);

    /* A linked directory: reported once; what lies behind it is not walked. */
    cr_assert_eq(mkdir(tpath("outside"), 0755), 0);
    write_text(tpath("outside/hidden.py"), "import os\n");
    char *dlink = tpath("site/vtdemo/sub");
    cr_assert_eq(symlink(tpath("outside"), dlink), 0);
    expect_one_installed_problem(whl, "vtdemo/sub: a symbolic link", NULL);
    cr_assert_eq(unlink(dlink), 0);

    /* A listed file replaced by a link to a copy of its very bytes. */
    char *init = tpath("site/vtdemo/__init__.py");
    copy_file(init, tpath("outside/__init__.py"));
    cr_assert_eq(unlink(init), 0);
    cr_assert_eq(symlink(tpath("outside/__init__.py"), init), 0);
    expect_one_installed_problem(whl, "vtdemo/__init__.py: installed file reached through a symbolic link", NULL);
    cr_assert_eq(unlink(init), 0);
    copy_file(tpath("outside/__init__.py"), init);
    expect_installed_verifies(whl);
}

/* ---- wheel zip structure ---- */

static unsigned char *slurp_bytes(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "%s", path);
    cr_assert_eq(fseek(f, 0, SEEK_END), 0);
    long len = ftell(f);
    cr_assert_geq(len, 0);
    rewind(f);
    unsigned char *p = malloc((size_t)len + 1);
    cr_assert_eq(fread(p, 1, (size_t)len, f), (size_t)len);
    fclose(f);
    *n = (size_t)len;
    return p;
}

static uint32_t get32(const unsigned char *p) { return (uint32_t)p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24; }
static void put32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

/* The offset of the central header of member `name` in zip bytes z. */
static size_t central_header(const unsigned char *z, size_t n, const char *name)
{
    size_t nl = strlen(name);
    for (size_t i = 0; i + 46 <= n; i++)
        if (get32(z + i) == 0x02014b50 && (size_t)(z[i + 28] | z[i + 29] << 8) == nl && i + 46 + nl <= n &&
            memcmp(z + i + 46, name, nl) == 0)
            return i;
    cr_assert_fail("no central header for %s", name);
    return 0;
}

/* Verifies the wheel: exactly one problem line, holding a and b. */
static void expect_one_wheel_problem(const char *whl, const char *a, const char *b)
{
    vt_package_report r;
    vt_error err;
    cr_assert_eq(vt_package_verify_wheel(whl, NULL, &r, &err), VT_OK, "%s", err.msg);
    dump(&r);
    cr_assert_not(r.verified);
    cr_assert_eq(r.n_problems, 1);
    cr_assert(strstr(r.problems[0], a) && (!b || strstr(r.problems[0], b)), "%s", r.problems[0]);
    vt_package_report_free(&r);
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "'%s' provenance verify-wheel '%s' >/dev/null 2>&1", VT_BIN, whl);
    cr_assert_eq(run(cmd), 1, "%s", cmd);
}

static void expect_wheel_verifies(const char *whl, int members)
{
    vt_package_report r;
    vt_error err;
    cr_assert_eq(vt_package_verify_wheel(whl, NULL, &r, &err), VT_OK, "%s", err.msg);
    dump(&r);
    cr_assert(r.verified);
    cr_assert_eq(r.members_checked, members);
    vt_package_report_free(&r);
}

Test(wheel, central_directory_misstating_a_size_is_refused, .init = make_dir, .fini = remove_dir)
{
    /* libarchive writes this wheel with data descriptors after each member. */
    char *whl = demo_wheel();
    expect_wheel_verifies(whl, DEMO_MEMBERS);
    size_t n;
    unsigned char *orig = slurp_bytes(whl, &n);
    size_t c = central_header(orig, n, "vtdemo/__init__.py");
    static const struct { int at; const char *field; } f[] = {
        { 24, "uncompressed size: central directory 12, local header 11, data descriptor 11, data 11: expected" },
        { 20, "compressed size: central directory" },
        { 16, "CRC-32: central directory" },
    };
    char *bad = tpath("bad-1.0-py3-none-any.whl");
    for (size_t k = 0; k < sizeof f / sizeof *f; k++) {
        unsigned char *z = malloc(n);
        memcpy(z, orig, n);
        put32(z + c + f[k].at, get32(z + c + f[k].at) + 1);
        write_bytes(bad, z, n);
        free(z);
        expect_one_wheel_problem(bad, "vtdemo/__init__.py: ", f[k].field);
    }
    /* The real pip wheel (Python's zipfile: sizes in the local headers). */
    char pip[512];
    find_wheel("/usr/share/python-wheels/pip-*.whl", pip, sizeof pip);
    free(orig);
    orig = slurp_bytes(pip, &n);
    c = central_header(orig, n, "pip/__init__.py");
    put32(orig + c + 24, get32(orig + c + 24) - 1);
    write_bytes(bad, orig, n);
    expect_one_wheel_problem(bad, "pip/__init__.py: uncompressed size: central directory", "local header");
    free(orig);
}

/* A member whose name libarchive cannot read (flagged UTF-8, not UTF-8) is
 * a problem named by its position, never a member skipped in silence. */
Test(wheel, a_member_name_that_is_not_readable_is_a_problem, .init = make_dir, .fini = remove_dir)
{
    char *whl = demo_wheel();
    size_t n;
    unsigned char *z = slurp_bytes(whl, &n);
    size_t c = central_header(z, n, "vtdemo/__init__.py");
    size_t loc = get32(z + c + 42);
    cr_assert_eq(memcmp(z + loc + 30, "vtdemo/__init__.py", 18), 0);
    z[c + 46] = 0xff;
    z[loc + 30] = 0xff;
    z[c + 9] |= 0x08; /* general purpose flags, bit 11: the name is UTF-8 */
    z[loc + 7] |= 0x08;
    char *bad = tpath("badname-1.0-py3-none-any.whl");
    write_bytes(bad, z, n);
    free(z);
    vt_package_report r;
    vt_error err;
    cr_assert_eq(vt_package_verify_wheel(bad, NULL, &r, &err), VT_OK, "%s", err.msg);
    dump(&r);
    cr_assert_not(r.verified);
    int named = 0;
    for (int i = 0; i < r.n_problems; i++)
        named += strstr(r.problems[i], "name not readable") != NULL;
    cr_assert_eq(named, 1, "the unreadable member is named once");
    vt_package_report_free(&r);
}

/* A zip written here byte by byte, like Python's zipfile (sizes in the
 * local headers, no descriptors), with defects on request. */
typedef struct zbuild {
    unsigned char *p;
    size_t n, cap;
} zbuild;

static void zb_put(zbuild *b, const void *d, size_t n)
{
    if (b->n + n > b->cap) {
        b->cap = (b->n + n) * 2;
        b->p = realloc(b->p, b->cap);
        cr_assert_not_null(b->p);
    }
    memcpy(b->p + b->n, d, n);
    b->n += n;
}

static void zb_16(zbuild *b, unsigned v) { unsigned char x[2] = { (unsigned char)v, (unsigned char)(v >> 8) }; zb_put(b, x, 2); }
static void zb_32(zbuild *b, uint32_t v)
{
    unsigned char x[4];
    put32(x, v);
    zb_put(b, x, 4);
}

enum {
    ZD_NONE, ZD_GAP, ZD_LOCAL_NAME, ZD_LOCAL_USIZE, ZD_METHOD12, ZD_ENCRYPTED, ZD_UPATH, ZD_STORED_CSIZE,
    ZD_Z64_EXTRA, ZD_Z64_EXTRA_MISSING, /* member 0's central sizes and offset in a ZIP64 extra field (or not) */
    ZD_APPENDED, ZD_DISK1, ZD_CDSIZE1, ZD_NTOTAL_PLUS, ZD_NTOTAL_MINUS, /* the end record */
    ZD_ZIP64, ZD_ZIP64_DISAGREE, ZD_ZIP64_BADREC,                       /* ZIP64 end records */
    ZD_TAIL_GAP                                                         /* bytes before the central directory */
};

/* The wheel of mem[] (+ RECORD) into path, deflated but member 1 (stored);
 * defects apply to member 0, ZD_STORED_CSIZE to member 1. */
static void build_zip(const char *path, int defect)
{
    zmember mem[] = {
        { "zd/__init__.py", "VALUE = 1\nVALUE = 1\nVALUE = 1\n", 0 },
        { "zd/data.txt", "plain text", 0 },
        { "zd-1.0.dist-info/METADATA", "Metadata-Version: 2.1\nName: zd\nVersion: 1.0\n", 0 },
        { "zd-1.0.dist-info/RECORD", NULL, 0 },
    };
    enum { NM = sizeof mem / sizeof *mem };
    static char record[1024];
    record[0] = '\0';
    for (int i = 0; i < NM - 1; i++) {
        mem[i].len = strlen(mem[i].data);
        char h[64];
        record_hash(mem[i].data, mem[i].len, h);
        snprintf(record + strlen(record), sizeof record - strlen(record), "%s,sha256=%s,%zu\n", mem[i].name, h,
                 mem[i].len);
    }
    strcat(record, "zd-1.0.dist-info/RECORD,,\n");
    mem[NM - 1].data = record;
    mem[NM - 1].len = strlen(record);

    zbuild b = { 0 }, cd = { 0 };
    for (int i = 0; i < NM; i++) {
        unsigned char comp[4096];
        if (i == 1) { /* stored */
            uint32_t len = (uint32_t)mem[i].len;
            memcpy(comp, mem[i].data, len);
            uint32_t crc = (uint32_t)crc32(0, comp, len);
            uint32_t off = (uint32_t)b.n;
            if (defect == ZD_GAP)
                zb_put(&b, "hidden bytes....", 16), off += 16; /* room for what only a streaming reader would see */
            size_t nl = strlen(mem[i].name);
            zb_32(&b, 0x04034b50);
            zb_16(&b, 10), zb_16(&b, 0), zb_16(&b, 0), zb_16(&b, 0), zb_16(&b, 0x21);
            zb_32(&b, crc), zb_32(&b, len), zb_32(&b, len), zb_16(&b, (unsigned)nl), zb_16(&b, 0);
            zb_put(&b, mem[i].name, nl);
            zb_put(&b, comp, len);
            zb_32(&cd, 0x02014b50);
            zb_16(&cd, 0x031e), zb_16(&cd, 10), zb_16(&cd, 0), zb_16(&cd, 0), zb_16(&cd, 0), zb_16(&cd, 0x21);
            zb_32(&cd, crc), zb_32(&cd, len + (defect == ZD_STORED_CSIZE)), zb_32(&cd, len);
            zb_16(&cd, (unsigned)nl), zb_16(&cd, 0), zb_16(&cd, 0), zb_16(&cd, 0), zb_16(&cd, 0);
            zb_32(&cd, 0644u << 16), zb_32(&cd, off);
            zb_put(&cd, mem[i].name, nl);
            continue;
        }
        z_stream s;
        memset(&s, 0, sizeof s);
        cr_assert_eq(deflateInit2(&s, 9, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY), Z_OK);
        s.next_in = (unsigned char *)mem[i].data;
        s.avail_in = (uInt)mem[i].len;
        s.next_out = comp;
        s.avail_out = sizeof comp;
        cr_assert_eq(deflate(&s, Z_FINISH), Z_STREAM_END);
        uint32_t csize = (uint32_t)s.total_out, usize = (uint32_t)mem[i].len;
        deflateEnd(&s);
        uint32_t crc = (uint32_t)crc32(0, (const unsigned char *)mem[i].data, (uInt)mem[i].len);
        int d0 = i == 0 ? defect : ZD_NONE;
        uint32_t off = (uint32_t)b.n;
        unsigned flags = d0 == ZD_ENCRYPTED ? 1 : 0, method = d0 == ZD_METHOD12 ? 12 : 8;
        size_t nl = strlen(mem[i].name);
        char lname[128];
        memcpy(lname, mem[i].name, nl);
        if (d0 == ZD_LOCAL_NAME)
            lname[0] = 'Z';
        zb_32(&b, 0x04034b50);
        zb_16(&b, 20), zb_16(&b, flags), zb_16(&b, method), zb_16(&b, 0), zb_16(&b, 0x21);
        zb_32(&b, crc), zb_32(&b, csize), zb_32(&b, usize + (d0 == ZD_LOCAL_USIZE));
        zb_16(&b, (unsigned)nl), zb_16(&b, 0);
        zb_put(&b, lname, nl);
        zb_put(&b, comp, csize);
        const char *other = "zd/other.py";
        int z64 = d0 == ZD_Z64_EXTRA || d0 == ZD_Z64_EXTRA_MISSING;
        unsigned xlen = d0 == ZD_UPATH ? (unsigned)(4 + 5 + strlen(other)) : d0 == ZD_Z64_EXTRA ? 28 : 0;
        zb_32(&cd, 0x02014b50);
        zb_16(&cd, 0x031e), zb_16(&cd, 20), zb_16(&cd, flags), zb_16(&cd, method), zb_16(&cd, 0), zb_16(&cd, 0x21);
        zb_32(&cd, crc), zb_32(&cd, z64 ? 0xffffffffu : csize), zb_32(&cd, z64 ? 0xffffffffu : usize);
        zb_16(&cd, (unsigned)nl), zb_16(&cd, xlen), zb_16(&cd, 0), zb_16(&cd, 0), zb_16(&cd, 0);
        zb_32(&cd, 0644u << 16), zb_32(&cd, z64 ? 0xffffffffu : off);
        zb_put(&cd, mem[i].name, nl);
        if (d0 == ZD_Z64_EXTRA) { /* uncompressed size, compressed size, offset: in that order */
            zb_16(&cd, 0x0001), zb_16(&cd, 24);
            zb_32(&cd, usize), zb_32(&cd, 0), zb_32(&cd, csize), zb_32(&cd, 0), zb_32(&cd, off), zb_32(&cd, 0);
        }
        if (d0 == ZD_UPATH) { /* Info-ZIP Unicode Path: version, CRC-32 of the name, the other name */
            zb_16(&cd, 0x7075), zb_16(&cd, xlen - 4);
            zb_put(&cd, "\x01", 1);
            zb_32(&cd, (uint32_t)crc32(0, (const unsigned char *)mem[i].name, (uInt)nl));
            zb_put(&cd, other, strlen(other));
        }
    }
    if (defect == ZD_TAIL_GAP)
        zb_put(&b, "hidden bytes....", 16); /* after the last member, before the central directory */
    uint32_t cd_off = (uint32_t)b.n, cd_size = (uint32_t)cd.n;
    zb_put(&b, cd.p, cd.n);
    int z64 = defect == ZD_ZIP64 || defect == ZD_ZIP64_DISAGREE || defect == ZD_ZIP64_BADREC;
    if (z64) { /* ZIP64 end record, then its locator */
        uint32_t off64 = (uint32_t)b.n;
        zb_32(&b, defect == ZD_ZIP64_BADREC ? 0x06064b51 : 0x06064b50);
        zb_32(&b, 44), zb_32(&b, 0), zb_16(&b, 45), zb_16(&b, 45), zb_32(&b, 0), zb_32(&b, 0);
        zb_32(&b, NM), zb_32(&b, 0), zb_32(&b, NM), zb_32(&b, 0);
        zb_32(&b, cd_size), zb_32(&b, 0), zb_32(&b, cd_off), zb_32(&b, 0);
        zb_32(&b, 0x07064b50), zb_32(&b, 0), zb_32(&b, off64), zb_32(&b, 0), zb_32(&b, 1);
    }
    unsigned n_end = defect == ZD_NTOTAL_PLUS ? NM + 1 : defect == ZD_NTOTAL_MINUS ? NM - 1 : NM;
    if (defect == ZD_ZIP64 || defect == ZD_ZIP64_BADREC)
        n_end = 0xffff;
    if (defect == ZD_ZIP64_DISAGREE)
        n_end = NM + 1; /* not saturated, yet not the ZIP64 record's count */
    zb_32(&b, 0x06054b50);
    zb_16(&b, defect == ZD_DISK1 ? 1 : 0), zb_16(&b, 0), zb_16(&b, n_end), zb_16(&b, n_end);
    zb_32(&b, z64 ? 0xffffffffu : cd_size + (defect == ZD_CDSIZE1)), zb_32(&b, z64 ? 0xffffffffu : cd_off);
    zb_16(&b, 0);
    if (defect == ZD_APPENDED)
        zb_put(&b, "appended", 8);
    write_bytes(path, b.p, b.n);
    free(b.p);
    free(cd.p);
}

Test(wheel, zip_members_that_readers_would_see_differently_are_refused, .init = make_dir, .fini = remove_dir)
{
    char *whl = tpath("zd-1.0-py3-none-any.whl");
    build_zip(whl, ZD_NONE);
    expect_wheel_verifies(whl, 3);
    static const struct { int defect; const char *a, *b; } cases[] = {
        { ZD_GAP, "zd/data.txt: local header at offset", "expected each member to start where the previous one ends" },
        { ZD_LOCAL_NAME, "zd/__init__.py: the local header names it 'Zd/__init__.py'", "central directory's name" },
        { ZD_LOCAL_USIZE, "zd/__init__.py: uncompressed size: central directory 30, local header 31, data 30", NULL },
        { ZD_METHOD12, "zd/__init__.py: compression method 12", "expected stored (0) or deflate (8)" },
        { ZD_ENCRYPTED, "zd/__init__.py: encrypted", "expected a plain member" },
        { ZD_UPATH, "zd/__init__.py: the central header's Unicode Path field names it 'zd/other.py'", "one name" },
        { ZD_STORED_CSIZE, "zd/data.txt: compressed size: central directory 11, local header 10: expected", NULL },
        { ZD_TAIL_GAP, "zd-1.0.dist-info/RECORD: the last member ends at offset", "expected nothing between them" },
    };
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
        build_zip(whl, cases[k].defect);
        vt_package_report r;
        vt_error err;
        cr_assert_eq(vt_package_verify_wheel(whl, NULL, &r, &err), VT_OK, "%s", err.msg);
        dump(&r);
        cr_assert_not(r.verified, "defect %d", cases[k].defect);
        cr_assert_eq(r.n_problems, 1, "defect %d", cases[k].defect);
        cr_assert(has_line(r.problems, r.n_problems, cases[k].a, cases[k].b), "defect %d: no '%s'",
                  cases[k].defect, cases[k].a);
        vt_package_report_free(&r);
    }
    /* ZIP64 end records and extra fields, well formed: verified. */
    static const int fine[] = { ZD_ZIP64, ZD_Z64_EXTRA };
    for (size_t k = 0; k < sizeof fine / sizeof *fine; k++) {
        build_zip(whl, fine[k]);
        expect_wheel_verifies(whl, 3);
    }
    build_zip(whl, ZD_Z64_EXTRA_MISSING);
    expect_one_wheel_problem(whl, "zd/__init__.py: central header extra fields: expected well-formed fields", NULL);

    /* No central directory every reader finds alike: bad input (exit 2). */
    static const struct { int defect; const char *msg; } structure[] = {
        { ZD_APPENDED, "expected a zip end of central directory record whose comment ends the file" },
        { ZD_DISK1, "end record: expected a single-disk zip" },
        { ZD_CDSIZE1, "expected it to end where the end records begin" },
        { ZD_NTOTAL_PLUS, "central header 5 of 5: expected a complete central file header" },
        { ZD_NTOTAL_MINUS, "bytes after the last of 3 central headers: expected the end records" },
        { ZD_ZIP64_DISAGREE, "end record and ZIP64 end record disagree on the central directory" },
        { ZD_ZIP64_BADREC, "ZIP64 end record: expected a single-disk ZIP64 end record right before its locator" },
    };
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "'%s' provenance verify-wheel '%s' >/dev/null 2>&1", VT_BIN, whl);
    for (size_t k = 0; k < sizeof structure / sizeof *structure; k++) {
        build_zip(whl, structure[k].defect);
        vt_package_report r;
        vt_error err;
        vt_error_clear(&err);
        cr_assert_eq(vt_package_verify_wheel(whl, NULL, &r, &err), VT_EINPUT, "defect %d", structure[k].defect);
        cr_assert(strstr(err.msg, "zd-1.0-py3-none-any.whl: offset ") && strstr(err.msg, structure[k].msg), "%s",
                  err.msg);
            cr_assert_eq(run(cmd), 2, "%s", cmd);
    }
}

/* ---- npm ---- */

Test(npm, pinned_tarballs_verify_and_loaded_object_matches)
{
    const char *loaded[] = { GGML_BASE };
    vt_package_report r;
    vt_error err;
    cr_assert_eq(vt_package_verify_npm(BINS_TGZ, LOCK, BINS_NAME, BINS_ROOT, loaded, 1, &r, &err), VT_OK, "%s",
                 err.msg);
    dump(&r);
    cr_assert(r.verified);
    cr_assert_eq(r.members_checked, 1);
    cr_assert_str_eq(r.kind, "npm");
    cr_assert_str_eq(r.integrity, r.computed_integrity);
    cr_assert(strncmp(r.integrity, "sha512-", 7) == 0);
    vt_package_report_free(&r);

    cr_assert_eq(vt_package_verify_npm(MAIN_TGZ, LOCK, "node-llama-cpp", NULL, NULL, 0, &r, &err), VT_OK, "%s",
                 err.msg);
    dump(&r);
    cr_assert(r.verified);
    vt_package_report_free(&r);

    char cmd[1024];
    snprintf(cmd, sizeof cmd, "'%s' provenance verify-npm '%s' --lock '%s' --name '%s' --root '%s' --loaded '%s' >/dev/null",
             VT_BIN, BINS_TGZ, LOCK, BINS_NAME, BINS_ROOT, GGML_BASE);
    cr_assert_eq(run(cmd), 0, "%s", cmd);
}

Test(npm, tampered_or_foreign_loaded_object_is_named, .init = make_dir, .fini = remove_dir)
{
    cr_assert_eq(mkdir(tpath("pkg"), 0755), 0);
    cr_assert_eq(mkdir(tpath("pkg/bins"), 0755), 0);
    cr_assert_eq(mkdir(tpath("pkg/bins/linux-x64"), 0755), 0);
    char *so = tpath("pkg/bins/linux-x64/libggml-base.so");
    copy_file(GGML_BASE, so);
    const char *loaded[] = { so };
    vt_package_report r;
    vt_error err;
    cr_assert_eq(vt_package_verify_npm(BINS_TGZ, LOCK, BINS_NAME, tpath("pkg"), loaded, 1, &r, &err), VT_OK, "%s",
                 err.msg);
    dump(&r);
    cr_assert(r.verified); /* an exact copy is the same bytes */
    vt_package_report_free(&r);

    flip_byte(so, 4096);
    char *extra = tpath("pkg/bins/linux-x64/libextra.so");
    copy_file(GGML_BASE, extra);
    const char *loaded2[] = { so, extra, GGML_BASE };
    cr_assert_eq(vt_package_verify_npm(BINS_TGZ, LOCK, BINS_NAME, tpath("pkg"), loaded2, 3, &r, &err), VT_OK, "%s",
                 err.msg);
    cr_assert_not(r.verified);
    cr_assert_eq(r.n_problems, 3);
    cr_assert(has_line(r.problems, r.n_problems, "libggml-base.so", "differs from tarball member "
                                                                    "package/bins/linux-x64/libggml-base.so"));
    cr_assert(has_line(r.problems, r.n_problems, "libextra.so", "no tarball member"));
    cr_assert(has_line(r.problems, r.n_problems, GGML_BASE, "not under the package root"));
    vt_package_report_free(&r);

    char cmd[1400];
    snprintf(cmd, sizeof cmd, "'%s' provenance verify-npm '%s' --lock '%s' --name '%s' --root '%s' --loaded '%s' "
             ">/dev/null 2>&1", VT_BIN, BINS_TGZ, LOCK, BINS_NAME, tpath("pkg"), so);
    cr_assert_eq(run(cmd), 1, "%s", cmd);
}

Test(npm, wrong_integrity_or_bad_lock, .init = make_dir, .fini = remove_dir)
{
    /* The real lock with the binaries' integrity swapped for the main package's. */
    char *lock = tpath("lock.json");
    write_text(lock, "{\"lockfile\": \"vt.npm-lock/1\", \"packages\": [{\"name\": \"" BINS_NAME "\", "
                     "\"version\": \"3.22.1\", \"integrity\": \"sha512-bltIipuWmc123H7tMIgDGKSsSrhmhlQYeVUC48XTjVW7XGJ"
                     "JiJJyCdlTMzQ/LiWoPkGDpcL4FviDpgw7qfTiDw==\"}]}");
    vt_package_report r;
    vt_error err;
    cr_assert_eq(vt_package_verify_npm(BINS_TGZ, lock, BINS_NAME, NULL, NULL, 0, &r, &err), VT_OK, "%s", err.msg);
    cr_assert_not(r.verified);
    cr_assert_eq(r.n_problems, 1);
    cr_assert(strstr(r.problems[0], "integrity") && strstr(r.problems[0], "differs"), "%s", r.problems[0]);
    vt_package_report_free(&r);
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "'%s' provenance verify-npm '%s' --lock '%s' --name '%s' >/dev/null 2>&1", VT_BIN,
             BINS_TGZ, lock, BINS_NAME);
    cr_assert_eq(run(cmd), 1, "%s", cmd);

    /* A version the tarball is not. */
    write_text(lock, "{\"lockfile\": \"vt.npm-lock/1\", \"packages\": [{\"name\": \"" BINS_NAME "\", "
                     "\"version\": \"9.9.9\", \"integrity\": \"sha512-5uCCDNqWCNfaAm8aR/Uzxbo4HBpKgNF91kCHPepKhgMgV2"
                     "OAmatoefbOlMihsqCiH2Od35E/eUHQCFbfRBJuOg==\"}]}");
    cr_assert_eq(vt_package_verify_npm(BINS_TGZ, lock, BINS_NAME, NULL, NULL, 0, &r, &err), VT_OK, "%s", err.msg);
    cr_assert_not(r.verified);
    cr_assert(has_line(r.problems, r.n_problems, "version", "9.9.9"));
    vt_package_report_free(&r);

    /* Malformed locks and unknown names are bad input, naming the field. */
    write_text(lock, "{\"lockfile\": \"vt.npm-lock/1\", \"packages\": [{\"name\": \"x\", \"version\": \"1\"}]}");
    cr_assert_eq(vt_package_verify_npm(BINS_TGZ, lock, "x", NULL, NULL, 0, &r, &err), VT_EINPUT);
    cr_assert(strstr(err.msg, "lock.json") && strstr(err.msg, "packages[0].integrity"), "%s", err.msg);
    write_text(lock, "{\"packages\": []}");
    cr_assert_eq(vt_package_verify_npm(BINS_TGZ, lock, "x", NULL, NULL, 0, &r, &err), VT_EINPUT);
    cr_assert(strstr(err.msg, "lockfile"), "%s", err.msg);
    cr_assert_eq(vt_package_verify_npm(BINS_TGZ, LOCK, "left-pad", NULL, NULL, 0, &r, &err), VT_EINPUT);
    cr_assert(strstr(err.msg, "left-pad"), "%s", err.msg);
    snprintf(cmd, sizeof cmd, "'%s' provenance verify-npm '%s' --lock '%s' --name left-pad >/dev/null 2>&1", VT_BIN,
             BINS_TGZ, LOCK);
    cr_assert_eq(run(cmd), 2, "%s", cmd);
}

/* A gzip tarball of (name, data) members, and a lock pinning it as x@1.0.0. */
static void npm_tarball(const char *tgz, const char *lock, const char *const *names, const char *const *data, int n)
{
    struct archive *w = archive_write_new();
    cr_assert_eq(archive_write_set_format_pax_restricted(w), ARCHIVE_OK);
    cr_assert_eq(archive_write_add_filter_gzip(w), ARCHIVE_OK);
    cr_assert_eq(archive_write_open_filename(w, tgz), ARCHIVE_OK, "%s", archive_error_string(w));
    for (int i = 0; i < n; i++) {
        struct archive_entry *e = archive_entry_new();
        archive_entry_set_pathname(e, names[i]);
        archive_entry_set_filetype(e, AE_IFREG);
        archive_entry_set_perm(e, 0644);
        archive_entry_set_size(e, (la_int64_t)strlen(data[i]));
        cr_assert_eq(archive_write_header(w, e), ARCHIVE_OK, "%s: %s", names[i], archive_error_string(w));
        cr_assert_eq(archive_write_data(w, data[i], strlen(data[i])), (la_ssize_t)strlen(data[i]));
        archive_entry_free(e);
    }
    cr_assert_eq(archive_write_close(w), ARCHIVE_OK);
    archive_write_free(w);
    size_t len;
    unsigned char *bytes = slurp_bytes(tgz, &len);
    unsigned char md[64];
    unsigned int mdl = 0;
    cr_assert(EVP_Digest(bytes, len, md, &mdl, EVP_sha512(), NULL) && mdl == 64);
    free(bytes);
    unsigned char b64[96];
    EVP_EncodeBlock(b64, md, 64);
    char text[512];
    snprintf(text, sizeof text, "{\"lockfile\": \"vt.npm-lock/1\", \"packages\": [{\"name\": \"x\", \"version\": "
             "\"1.0.0\", \"integrity\": \"sha512-%s\"}]}\n", (const char *)b64);
    write_text(lock, text);
}

#define PJ "{\"name\": \"x\", \"version\": \"1.0.0\"}\n"

Test(npm, members_outside_the_package_are_named, .init = make_dir, .fini = remove_dir)
{
    char *tgz = tpath("x-1.0.0.tgz"), *lock = tpath("lock.json");
    vt_package_report r;
    vt_error err;
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "'%s' provenance verify-npm '%s' --lock '%s' --name x >/dev/null 2>&1", VT_BIN, tgz,
             lock);

    const char *clean[] = { "package/package.json", "package/index.js", "package/lib/a..b.js" };
    const char *data[] = { PJ, "module.exports = 1;\n", "'..' inside a name is fine\n", "x\n", "y\n" };
    npm_tarball(tgz, lock, clean, data, 3);
    cr_assert_eq(vt_package_verify_npm(tgz, lock, "x", NULL, NULL, 0, &r, &err), VT_OK, "%s", err.msg);
    dump(&r);
    cr_assert(r.verified);
    vt_package_report_free(&r);
    cr_assert_eq(run(cmd), 0, "%s", cmd);

    const char *dotdot[] = { "package/package.json", "package/index.js", "package/../../evil.js",
                             "../escape.js", "package/lib/.." };
    npm_tarball(tgz, lock, dotdot, data, 5);
    cr_assert_eq(vt_package_verify_npm(tgz, lock, "x", NULL, NULL, 0, &r, &err), VT_OK, "%s", err.msg);
    dump(&r);
    cr_assert_not(r.verified);
    cr_assert_eq(r.n_problems, 3);
    cr_assert(has_line(r.problems, r.n_problems, "x-1.0.0.tgz: member package/../../evil.js: ",
                       "expected a relative path inside the package"));
    cr_assert(has_line(r.problems, r.n_problems, "member ../escape.js: ", "'..' component"));
    cr_assert(has_line(r.problems, r.n_problems, "member package/lib/..: ", "'..' component"));
    vt_package_report_free(&r);
    cr_assert_eq(run(cmd), 1, "%s", cmd);

    const char *absolute[] = { "package/package.json", "/etc/profile.d/evil.sh", "package/index.js" };
    npm_tarball(tgz, lock, absolute, data, 3);
    cr_assert_eq(vt_package_verify_npm(tgz, lock, "x", NULL, NULL, 0, &r, &err), VT_OK, "%s", err.msg);
    dump(&r);
    cr_assert_not(r.verified);
    cr_assert_eq(r.n_problems, 1);
    cr_assert(has_line(r.problems, r.n_problems, "member /etc/profile.d/evil.sh: an absolute path", NULL));
    vt_package_report_free(&r);
    cr_assert_eq(run(cmd), 1, "%s", cmd);
}

Test(npm, package_json_is_read_strictly, .init = make_dir, .fini = remove_dir)
{
    /* cJSON alone reads the version "1.0.0\u0000-evil" as "1.0.0". */
    char *tgz = tpath("x-1.0.0.tgz"), *lock = tpath("lock.json");
    const char *names[] = { "package/package.json" };
    const char *evil[] = { "{\"name\": \"x\", \"version\": \"1.0.0\\u0000-evil\"}\n" };
    npm_tarball(tgz, lock, names, evil, 1);
    vt_package_report r;
    vt_error err;
    cr_assert_eq(vt_package_verify_npm(tgz, lock, "x", NULL, NULL, 0, &r, &err), VT_OK, "%s", err.msg);
    dump(&r);
    cr_assert_not(r.verified);
    cr_assert(has_line(r.problems, r.n_problems, "x-1.0.0.tgz: package/package.json: offset 31: field version: "
                       "expected a string without a \\u0000 escape", NULL));
    vt_package_report_free(&r);
    const char *fine[] = { PJ };
    npm_tarball(tgz, lock, names, fine, 1);
    cr_assert_eq(vt_package_verify_npm(tgz, lock, "x", NULL, NULL, 0, &r, &err), VT_OK, "%s", err.msg);
    dump(&r);
    cr_assert(r.verified);
    vt_package_report_free(&r);
}

/* RECORD listing a file twice is a problem, named with both lines. */
Test(wheel, a_file_listed_twice_in_record_is_refused, .init = make_dir, .fini = remove_dir)
{
    static const char data[] = "VALUE = 1\n";
    char h[64], record[1024];
    record_hash(data, sizeof data - 1, h);
    snprintf(record, sizeof record, "twice/__init__.py,sha256=%s,%zu\ntwice/__init__.py,sha256=%s,%zu\n"
             "twice-1.0.dist-info/RECORD,,\n", h, sizeof data - 1, h, sizeof data - 1);
    char *whl = tpath("twice-1.0-py3-none-any.whl");
    struct archive *w = zip_open_write(whl);
    zip_add(w, "twice/__init__.py", data, sizeof data - 1, 0644);
    zip_add(w, "twice-1.0.dist-info/RECORD", record, strlen(record), 0644);
    cr_assert_eq(archive_write_close(w), ARCHIVE_OK);
    archive_write_free(w);
    vt_package_report r;
    vt_error err;
    vt_error_clear(&err);
    cr_assert_eq(vt_package_verify_wheel(whl, NULL, &r, &err), VT_OK, "%s", err.msg);
    cr_assert_not(r.verified);
    cr_assert(has_line(r.problems, r.n_problems, "twice/__init__.py: listed twice in RECORD (lines 1 and 2)", NULL));
    vt_package_report_free(&r);
}

/* The installed package's own directory a symbolic link (to a faithful
 * copy): refused, links are not followed; as a directory it verifies. */
Test(wheel, an_installed_package_directory_that_is_a_link_is_refused, .init = make_dir, .fini = remove_dir,
     .timeout = 600)
{
    char *whl = demo_wheel();
    char *target = tpath("site");
    pip_install(whl, target);
    vt_package_report r;
    vt_error err;
    vt_error_clear(&err);
    cr_assert_eq(vt_package_verify_wheel(whl, target, &r, &err), VT_OK, "%s", err.msg);
    cr_assert(r.verified);
    vt_package_report_free(&r);
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "cd '%s' && mv vtdemo ../vtdemo-real && ln -s ../vtdemo-real vtdemo", target);
    cr_assert_eq(run(cmd), 0);
    cr_assert_eq(vt_package_verify_wheel(whl, target, &r, &err), VT_OK, "%s", err.msg);
    cr_assert_not(r.verified);
    cr_assert(has_line(r.problems, r.n_problems, "vtdemo: a symbolic link where the installed package directory should be",
                       NULL), "%d problems, the first: %s", r.n_problems, r.n_problems ? r.problems[0] : "");
    vt_package_report_free(&r);
}

/* vt provenance manifest verify --json (vt.manifest-verify/1): each file
 * with the size and sha256 listed and found, its status and the mismatch
 * as the text's MISMATCH line gives it, from one check
 * (vt_manifest_check_files) that both printers read; exit 1 still with the
 * document (verified false), exit 2 with none. */
Test(manifest, verify_json_lists_each_file_and_mismatch, .init = make_dir, .fini = remove_dir)
{
    make_model_files();
    const char *files[] = { tpath("models/a.gguf"), tpath("models/b.gguf"), tpath("models/tokenizer.json") };
    const char *mp = tpath("models/M.json");
    vt_error err;
    vt_manifest m;
    cr_assert_eq(vt_manifest_make_for(mp, files, 3, &m, &err), VT_OK, "%s", err.msg);
    cr_assert_eq(vt_manifest_write(&m, mp, NULL, &err), VT_OK, "%s", err.msg);
    static char text[1 << 16], json[1 << 16], e[4096];
    for (int round = 0; round < 2; round++) {
        if (round == 1) { /* a byte changed, a file gone */
            flip_byte(files[0], 50000);
            cr_assert_eq(unlink(files[1]), 0);
        }
        int rt = vt_test_sh(tmpdir, text, sizeof text, e, sizeof e, "'%s' provenance manifest verify '%s'", VT_BIN, mp);
        cr_assert_eq(rt, round, "exit %d: %s", rt, e);
        int rj = vt_test_sh(tmpdir, json, sizeof json, e, sizeof e, "'%s' provenance manifest verify '%s' --json",
                            VT_BIN, mp);
        cr_assert_eq(rj, rt, "--json: exit %d, the text's %d: %s", rj, rt, e);
        cJSON *doc = vt_json_parse(json, strlen(json), "stdout", &err);
        cr_assert_not_null(doc, "%s:\n%s", err.msg, json);
        cr_assert_str_eq(vt_test_get(doc, "schema")->valuestring, "vt.manifest-verify/1");
        cr_assert_str_eq(vt_test_get(doc, "manifest")->valuestring, mp);
        cr_assert_str_eq(vt_test_get(doc, "base")->valuestring, tpath("models"));
        /* The text, printed again from the JSON's values. */
        char again[1 << 14] = "";
        size_t k = 0;
        const cJSON *arr = vt_test_get(doc, "files"), *o;
        cr_assert_eq(cJSON_GetArraySize(arr), 3);
        int i = 0, matched = 0;
        cJSON_ArrayForEach(o, arr)
        {
            const char *status = vt_test_get(o, "status")->valuestring;
            const cJSON *problem = vt_test_get(o, "problem");
            cr_assert_str_eq(vt_test_get(o, "name")->valuestring, m.files[i].name);
            cr_assert_str_eq(vt_test_get(o, "path")->valuestring, files[i]);
            cr_assert_eq(vt_test_get(o, "size")->valuedouble, (double)m.files[i].size);
            cr_assert_str_eq(vt_test_get(o, "sha256")->valuestring, m.files[i].sha256.hex);
            const char *want = round == 0 || i == 2 ? "ok" : i == 0 ? "differs" : "missing";
            cr_assert_str_eq(status, want, "%s", files[i]);
            cr_assert_eq(cJSON_IsNull(problem), strcmp(status, "ok") == 0);
            if (strcmp(status, "missing") == 0) {
                cr_assert(cJSON_IsNull(vt_test_get(o, "found_size")) && cJSON_IsNull(vt_test_get(o, "found_sha256")));
            } else {
                vt_sha256_hex h;
                uint64_t size;
                cr_assert_eq(vt_sha256_file(files[i], &h, &size, &err), VT_OK);
                cr_assert_eq(vt_test_get(o, "found_size")->valuedouble, (double)size);
                cr_assert_str_eq(vt_test_get(o, "found_sha256")->valuestring, h.hex);
            }
            if (!cJSON_IsNull(problem))
                k += (size_t)snprintf(again + k, sizeof again - k, "MISMATCH %s\n", problem->valuestring);
            matched += strcmp(status, "ok") == 0;
            i++;
        }
        cr_assert_eq(vt_test_get(doc, "matched")->valuedouble, matched);
        cr_assert_eq(vt_test_get(doc, "mismatched")->valuedouble, 3 - matched);
        cr_assert_eq(cJSON_IsTrue(vt_test_get(doc, "verified")), round == 0);
        if (round == 0)
            snprintf(again + k, sizeof again - k, "verified %s: %d files match\n", mp, matched);
        cr_assert_str_eq(text, again, "the text from the JSON's values");
        cJSON_Delete(doc);
    }
    vt_manifest_free(&m);
    /* Refused input: exit 2, one line, no JSON. */
    int rc = vt_test_sh(tmpdir, json, sizeof json, e, sizeof e, "'%s' provenance manifest verify '%s' --json", VT_BIN,
                        tpath("none.json"));
    cr_assert_eq(rc, 2);
    cr_assert_str_eq(json, "");
    cr_assert(strchr(e, '\n') && !strchr(e, '\n')[1], "%s", e);
}

/* vt_manifest_check_files: per file what was found; the lines of
 * vt_manifest_check are its problems, in order. */
Test(manifest, check_files_gives_each_files_outcome, .init = make_dir, .fini = remove_dir)
{
    make_model_files();
    const char *files[] = { tpath("models/a.gguf"), tpath("models/b.gguf"), tpath("models/tokenizer.json") };
    vt_error err;
    vt_manifest m;
    cr_assert_eq(vt_manifest_make_for(tpath("models/M.json"), files, 3, &m, &err), VT_OK, "%s", err.msg);
    cr_assert_eq(unlink(files[0]), 0);
    FILE *f = fopen(files[2], "ab");
    fputc('x', f);
    fclose(f);
    vt_manifest_result *r;
    cr_assert_eq(vt_manifest_check_files(&m, tpath("models"), &r, &err), VT_ECHECK);
    cr_assert(strstr(err.msg, "2 of 3 files differ"), "%s", err.msg);
    cr_assert_eq(r[0].status, VT_MANIFEST_MISSING);
    cr_assert_eq(r[0].error, ENOENT);
    cr_assert_eq(r[0].size, 0);
    cr_assert_str_eq(r[0].sha256.hex, "");
    cr_assert_eq(r[1].status, VT_MANIFEST_OK);
    cr_assert_null(r[1].problem);
    cr_assert_eq(r[1].size, m.files[1].size);
    cr_assert_str_eq(r[1].sha256.hex, m.files[1].sha256.hex);
    cr_assert_eq(r[2].status, VT_MANIFEST_DIFFERS);
    cr_assert_eq(r[2].size, m.files[2].size + 1);
    cr_assert_str_eq(r[2].path, files[2]);
    char **lines;
    int n;
    cr_assert_eq(vt_manifest_check(&m, tpath("models"), &lines, &n, &err), VT_ECHECK);
    cr_assert_eq(n, 2);
    cr_assert_str_eq(lines[0], r[0].problem);
    cr_assert_str_eq(lines[1], r[2].problem);
    vt_prov_lines_free(lines, n);
    vt_manifest_results_free(r, m.n_files);
    vt_manifest_free(&m);
}

/* ---- verify-wheel and verify-npm --json ---- */

/* The text verify-wheel or verify-npm prints (stdout), made again from the
 * values of its --json document: the same numbers and lines, in order. */
static void package_text_from_json(const cJSON *doc, char *out, size_t cap)
{
    const int npm = strcmp(vt_test_get(doc, "schema")->valuestring, "vt.npm-verify/1") == 0;
    const cJSON *a = vt_test_get(doc, npm ? "tarball" : "wheel"), *x;
    size_t k = 0;
#define ADD(...) (k += (size_t)snprintf(out + k, k < cap ? cap - k : 0, __VA_ARGS__))
    ADD("%s %s\n  sha256 %s\n", npm ? "npm" : "wheel", vt_test_get(a, "path")->valuestring,
        vt_test_get(a, "sha256")->valuestring);
    if (npm) {
        const cJSON *li = vt_test_get(vt_test_get(doc, "lock"), "integrity"), *ti = vt_test_get(a, "integrity");
        if (cJSON_IsString(li))
            ADD("  lock integrity     %s\n", li->valuestring);
        if (cJSON_IsString(ti))
            ADD("  tarball integrity  %s\n", ti->valuestring);
    }
    ADD("  members checked %d", vt_test_get(doc, "members_checked")->valueint);
    if (!npm && cJSON_IsNumber(vt_test_get(doc, "installed_checked")) &&
        vt_test_get(doc, "installed_checked")->valueint)
        ADD(", installed files checked %d", vt_test_get(doc, "installed_checked")->valueint);
    ADD("\n");
    cJSON_ArrayForEach(x, vt_test_get(doc, "notes"))
        ADD("  note: %s\n", x->valuestring);
    int n = 0;
    cJSON_ArrayForEach(x, vt_test_get(doc, "problems"))
    {
        ADD("  PROBLEM: %s\n", x->valuestring);
        n++;
    }
    if (cJSON_IsTrue(vt_test_get(doc, "verified")))
        ADD("verified\n");
    else
        ADD("FAILED: %d problem%s\n", n, n == 1 ? "" : "s");
#undef ADD
    cr_assert_lt(k, cap, "the text from the JSON: too long");
}

/* Runs `vt provenance ARGS` as text and with --json: the same exit (want);
 * the JSON parsed, of the format schema, with verified as the exit says and
 * the text made again from it equal to the text run's. The document (free
 * with cJSON_Delete). */
static cJSON *text_and_json(int want, const char *schema, const char *args)
{
    static char text[1 << 16], json[1 << 16], e[8192], again[1 << 16];
    int rt = vt_test_sh(tmpdir, text, sizeof text, e, sizeof e, "'%s' provenance %s", VT_BIN, args);
    cr_assert_eq(rt, want, "%s: exit %d: %s", args, rt, e);
    int rj = vt_test_sh(tmpdir, json, sizeof json, e, sizeof e, "'%s' provenance %s --json", VT_BIN, args);
    cr_assert_eq(rj, rt, "%s --json: exit %d, the text's %d: %s", args, rj, rt, e);
    /* exit 1: the one line the text also gives, on stderr */
    const char *nl = strchr(e, '\n');
    cr_assert(rj == 0 ? !e[0] : strstr(e, ": verification failed: ") && nl && !nl[1], "%s", e);
    vt_error err;
    cJSON *doc = vt_json_parse(json, strlen(json), "stdout", &err);
    cr_assert_not_null(doc, "%s:\n%s", err.msg, json);
    cr_assert_str_eq(vt_test_get(doc, "schema")->valuestring, schema);
    cr_assert_eq(cJSON_IsTrue(vt_test_get(doc, "verified")), want == 0);
    cr_assert_eq(cJSON_GetArraySize(vt_test_get(doc, "problems")) == 0, want == 0);
    package_text_from_json(doc, again, sizeof again);
    cr_assert_str_eq(text, again, "the text from the JSON's values");
    return doc;
}

/* Refused input with --json: exit 2, one line on stderr, nothing on stdout. */
static void json_refused(const char *args)
{
    static char out[4096], e[4096];
    int rc = vt_test_sh(tmpdir, out, sizeof out, e, sizeof e, "'%s' provenance %s --json", VT_BIN, args);
    cr_assert_eq(rc, 2, "%s: exit %d: %s", args, rc, e);
    cr_assert_str_eq(out, "", "%s", args);
    cr_assert(strchr(e, '\n') && !strchr(e, '\n')[1], "%s", e);
}

/* vt provenance verify-wheel --json (vt.wheel-verify/1): the text's numbers,
 * notes and PROBLEM lines from the same report; exit 1 still with the
 * document (verified false), exit 2 with none. */
Test(wheel, verify_json_is_the_texts_report, .init = make_dir, .fini = remove_dir, .timeout = 600)
{
    char whl[512], args[1400];
    find_wheel("/usr/share/python-wheels/pip-*.whl", whl, sizeof whl);
    vt_package_report r;
    vt_error err;
    cr_assert_eq(vt_package_verify_wheel(whl, NULL, &r, &err), VT_OK, "%s", err.msg);
    snprintf(args, sizeof args, "verify-wheel '%s'", whl);
    cJSON *doc = text_and_json(0, "vt.wheel-verify/1", args);
    const cJSON *w = vt_test_get(doc, "wheel");
    cr_assert_str_eq(vt_test_get(w, "path")->valuestring, whl);
    cr_assert_str_eq(vt_test_get(w, "sha256")->valuestring, r.sha256.hex);
    cr_assert_eq(vt_test_get(doc, "members_checked")->valueint, r.members_checked);
    cr_assert_gt(r.members_checked, 400);
    cr_assert(cJSON_IsNull(vt_test_get(doc, "installed")) && cJSON_IsNull(vt_test_get(doc, "installed_checked")));
    cJSON_Delete(doc);
    vt_package_report_free(&r);

    /* One member changed: its problem, the member named. */
    char *copy = tpath("pip-copy-py3-none-any.whl");
    rebuild_wheel(whl, copy, "pip/_internal/cli/main.py", NULL, NULL);
    snprintf(args, sizeof args, "verify-wheel '%s'", copy);
    doc = text_and_json(1, "vt.wheel-verify/1", args);
    const cJSON *p = vt_test_get(doc, "problems");
    cr_assert_eq(cJSON_GetArraySize(p), 1);
    cr_assert(strstr(p->child->valuestring, "pip/_internal/cli/main.py: ") &&
                  strstr(p->child->valuestring, "RECORD says"),
              "%s", p->child->valuestring);
    cJSON_Delete(doc);

    /* Installed by pip: its files counted, the rewritten script a note. */
    char *demo = demo_wheel();
    pip_install(demo, tpath("site"));
    snprintf(args, sizeof args, "verify-wheel '%s' --installed '%s'", demo, tpath("site"));
    doc = text_and_json(0, "vt.wheel-verify/1", args);
    cr_assert_str_eq(vt_test_get(doc, "installed")->valuestring, tpath("site"));
    cr_assert_eq(vt_test_get(doc, "members_checked")->valueint, DEMO_MEMBERS);
    cr_assert_gt(vt_test_get(doc, "installed_checked")->valueint, 0);
    const cJSON *n = vt_test_get(doc, "notes"), *x;
    int rewritten = 0;
    cJSON_ArrayForEach(x, n)
        rewritten += strstr(x->valuestring, "bin/vtdemo-tool: rewritten script") != NULL;
    cr_assert_eq(rewritten, 1, "%d notes, none or several of the script", cJSON_GetArraySize(n));
    cJSON_Delete(doc);

    write_text(tpath("junk.whl"), "not a zip");
    snprintf(args, sizeof args, "verify-wheel '%s'", tpath("junk.whl"));
    json_refused(args);
}

/* vt provenance verify-npm --json (vt.npm-verify/1): likewise, with the
 * lock's and the tarball's integrity and the files loaded. */
Test(npm, verify_json_is_the_texts_report, .init = make_dir, .fini = remove_dir)
{
    char args[1400];
    snprintf(args, sizeof args, "verify-npm '%s' --lock '%s' --name '%s' --root '%s' --loaded '%s'", BINS_TGZ, LOCK,
             BINS_NAME, BINS_ROOT, GGML_BASE);
    cJSON *doc = text_and_json(0, "vt.npm-verify/1", args);
    const cJSON *t = vt_test_get(doc, "tarball"), *l = vt_test_get(doc, "lock"), *lo = vt_test_get(doc, "loaded");
    cr_assert_str_eq(vt_test_get(t, "path")->valuestring, BINS_TGZ);
    cr_assert_str_eq(vt_test_get(t, "integrity")->valuestring, vt_test_get(l, "integrity")->valuestring);
    cr_assert_str_eq(vt_test_get(l, "path")->valuestring, LOCK);
    cr_assert_str_eq(vt_test_get(l, "name")->valuestring, BINS_NAME);
    cr_assert_str_eq(vt_test_get(doc, "root")->valuestring, BINS_ROOT);
    cr_assert_eq(cJSON_GetArraySize(lo), 1);
    cr_assert_str_eq(vt_test_get(lo->child, "path")->valuestring, GGML_BASE);
    cr_assert_eq(vt_test_get(doc, "members_checked")->valueint, 1);
    cJSON_Delete(doc);

    /* The lock pins the main package's bytes for the binaries. */
    char *lock = tpath("lock.json");
    write_text(lock, "{\"lockfile\": \"vt.npm-lock/1\", \"packages\": [{\"name\": \"" BINS_NAME "\", "
                     "\"version\": \"3.22.1\", \"integrity\": \"sha512-bltIipuWmc123H7tMIgDGKSsSrhmhlQYeVUC48XTjVW7XGJ"
                     "JiJJyCdlTMzQ/LiWoPkGDpcL4FviDpgw7qfTiDw==\"}]}");
    snprintf(args, sizeof args, "verify-npm '%s' --lock '%s' --name '%s'", BINS_TGZ, lock, BINS_NAME);
    doc = text_and_json(1, "vt.npm-verify/1", args);
    l = vt_test_get(doc, "lock");
    cr_assert(strncmp(vt_test_get(l, "integrity")->valuestring, "sha512-bltI", 11) == 0);
    cr_assert(cJSON_IsNull(vt_test_get(doc, "root")));
    cr_assert_eq(cJSON_GetArraySize(vt_test_get(doc, "loaded")), 0);
    const cJSON *p = vt_test_get(doc, "problems");
    cr_assert_eq(cJSON_GetArraySize(p), 1);
    cr_assert(strstr(p->child->valuestring, ": integrity sha512-") && strstr(p->child->valuestring, " differs from "),
              "%s", p->child->valuestring);
    cJSON_Delete(doc);

    snprintf(args, sizeof args, "verify-npm '%s' --lock '%s' --name left-pad", BINS_TGZ, LOCK);
    json_refused(args);
}
