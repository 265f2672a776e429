/* vt fixture: generate GGUF fixtures at test time. */
#include "cmds.h"

#include "../common/vt_parse.h"
#include "../fixtures/fixture.h"

#include <stdio.h>
#include <string.h>

static const char usage_text[] =
    "usage: vt fixture make --preset codecs [--rows N] [--cols N] [--seed S] -o OUT.gguf\n"
    "\n"
    "codecs: one tensor per codec, random rows quantized by ggml's own quantizer,\n"
    "plus the F32 source. Defaults: --rows 8 --cols 512 --seed 1.\n";

int vt_cmd_fixture(int argc, char **argv)
{
    if (argc < 2 || strcmp(argv[1], "make") != 0) {
        if (argc >= 2 && strcmp(argv[1], "--help") == 0) {
            fputs(usage_text, stdout);
            return 0;
        }
        fputs(usage_text, stderr);
        return 2;
    }
    const char *preset = NULL, *out = NULL;
    int64_t rows = 8, cols = 512;
    uint64_t seed = 1;
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--help") == 0) {
            fputs(usage_text, stdout);
            return 0;
        }
        if (!v) {
            fprintf(stderr, "vt fixture make: %s: expected an option with a value\n", a);
            return 2;
        }
        i++;
        if (strcmp(a, "--preset") == 0)
            preset = v;
        else if (strcmp(a, "-o") == 0 || strcmp(a, "--out") == 0)
            out = v;
        else if (strcmp(a, "--rows") == 0 && vt_parse_i64(v, 1, 65536, &rows))
            ;
        else if (strcmp(a, "--cols") == 0 && vt_parse_i64(v, 256, 65536, &cols) && cols % 256 == 0)
            ;
        else if (strcmp(a, "--seed") == 0 && vt_parse_u64(v, &seed))
            ;
        else {
            fprintf(stderr, "vt fixture make: %s '%s': expected --preset, -o, --rows 1..65536, "
                            "--cols (multiple of 256), --seed N\n", a, v);
            return 2;
        }
    }
    if (!preset || strcmp(preset, "codecs") != 0) {
        fprintf(stderr, "vt fixture make: --preset: '%s': expected codecs\n", preset ? preset : "");
        return 2;
    }
    if (!out) {
        fprintf(stderr, "vt fixture make: -o: expected an output path\n");
        return 2;
    }
    vt_error err;
    vt_error_clear(&err);
    vt_ggml *g = vt_ggml_open(NULL, &err);
    if (!g || vt_fixture_make_codecs(g, rows, cols, seed, out, &err)) {
        fprintf(stderr, "%s\n", err.msg);
        vt_ggml_free(g);
        return err.code ? err.code : 2;
    }
    vt_ggml_free(g);
    printf("%s\n", out);
    return 0;
}
