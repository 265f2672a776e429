/* vt fixture: generate GGUF fixtures at test time. */
#include "cmds.h"

#include "../common/vt_parse.h"
#include "../common/vt_progress.h"
#include "../engine/codec.h"
#include "../fixtures/fixture.h"

#include <stdio.h>
#include <string.h>

static const char usage_text[] =
    "usage: vt fixture make --preset codecs [--rows N] [--cols N] [--seed S] -o OUT.gguf\n"
    "       vt fixture make [--arch qwen3] --preset tiny|small|bench-0.6b [--weights TYPE|Q4_K_M]\n"
    "                       [--outlier-channels N] [--seed S] [--tied|--untied] [--vocab FILE]\n"
    "                       [--threads N] [--quiet] [--overwrite] -o OUT.gguf\n"
    "       vt fixture make --arch qwen35 --preset tiny|bench-0.8b [--weights TYPE|Q4_K_M]\n"
    "                       [--outlier-channels N] [--seed S] [--tied|--untied] [--vocab FILE]\n"
    "                       [--threads N] [--quiet] [--overwrite] -o OUT.gguf\n"
    "\n"
    "codecs: one tensor per codec, random rows quantized by ggml's own quantizer,\n"
    "plus the F32 source. Defaults: --rows 8 --cols 512 --seed 1.\n"
    "\n"
    "qwen3 presets: a model llama.cpp loads and runs, with the Qwen vocabulary and\n"
    "deterministic random weights (norms F32; embedding, output head and every\n"
    "matrix in TYPE, quantized by ggml's own quantizer). Defaults: --weights F32\n"
    "--seed 1, --threads 0 (one per CPU; the output does not depend on it).\n"
    "--weights Q4_K_M mixes types as llama.cpp's Q4_K_M: attn_v, ffn_down and the output\n"
    "head (the embedding when tied) in Q6_K, every other matrix in Q4_K.\n"
    "--outlier-channels N (0..64, default 0): N channels of the hidden state get a gain of\n"
    "16 in the norms before attention and FFN, so the activations the matrices see have\n"
    "a few channels of much larger magnitude, as real models' do.\n"
    "  tiny        2 layers, hidden 256, 4/2 heads of 64, FFN 512, vocabulary cut to\n"
    "              1280 tokens (bytes + first 1021 merges + specials), separate head\n"
    "  small       4 layers, hidden 512, 8/4 heads of 64, FFN 1536, full vocabulary,\n"
    "              separate head\n"
    "  bench-0.6b  Qwen3-0.6B's shape: 28 layers, hidden 1024, 16/8 heads of 128,\n"
    "              FFN 3072, full vocabulary, head tied to the embedding\n"
    "\n"
    "qwen35 presets: a Qwen3.5 hybrid llama.cpp loads and runs (gated delta-net\n"
    "layers, one gated full-attention layer in four), vocabulary from\n"
    "ggml-vocab-qwen35.gguf; norms, ssm_conv1d, ssm_a and ssm_dt F32, every other\n"
    "tensor in TYPE. Same defaults.\n"
    "  tiny        4 layers (3 delta-net, 1 attention), hidden 256, FFN 512, attention\n"
    "              4/2 heads of 64, delta-net 2 key / 4 value heads of 64, vocabulary\n"
    "              cut to 1280 tokens, separate head\n"
    "  bench-0.8b  Qwen3.5-0.8B's shape: 24 layers, hidden 1024, FFN 3584, attention\n"
    "              8/2 heads of 256, delta-net 16 key / 16 value heads of 128, full\n"
    "              vocabulary, head tied to the embedding\n"
    "\n"
    "On a terminal, stderr shows a progress line (tensors written, rate); --quiet: none.\n"
    "--tied / --untied override the preset's choice of output head. TYPE is any\n"
    "codec with a decoder in 'vt codec list' (F32, F16, BF16, Q8_0, Q4_K, IQ2_XXS...)\n"
    "except Q8_K, an activation-only type llama.cpp cannot multiply.\n"
    "An existing OUT is refused unless --overwrite; OUT may never be the vocabulary file.\n"
    "Each option at most once.\n"
    "example: vt fixture make --preset tiny --weights Q8_0 -o tiny-Q8_0.gguf\n";

/* One line naming the option and what it expects; exit status 2. */
static int bad(const char *opt, const char *val, const char *expected)
{
    if (val)
        fprintf(stderr, "vt fixture make: %s '%s': expected %s\n", opt, val, expected);
    else
        fprintf(stderr, "vt fixture make: %s: expected %s\n", opt, expected);
    return 2;
}

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
    const char *preset = NULL, *out = NULL, *arch = NULL, *weights = NULL, *vocab = NULL;
    int64_t rows = 8, cols = 512, threads = 0, outliers = 0;
    int tied = -1; /* -1: the preset's choice */
    int quiet = 0, overwrite = 0;
    int rows_set = 0, cols_set = 0, threads_set = 0, outliers_set = 0;
    uint64_t seed = 1;
    vt_opt_seen seen = { .n = 0 }; /* valued options: none may repeat */
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0) {
            fputs(usage_text, stdout);
            return 0;
        }
        if (strcmp(a, "--quiet") == 0 || strcmp(a, "--overwrite") == 0) {
            int *flag = a[2] == 'q' ? &quiet : &overwrite;
            if (*flag)
                return bad(a, NULL, "at most once");
            *flag = 1;
            continue;
        }
        if (strcmp(a, "--tied") == 0 || strcmp(a, "--untied") == 0) {
            int want = strcmp(a, "--tied") == 0;
            if (tied >= 0)
                return bad(a, NULL, "only one of --tied and --untied, once");
            tied = want;
            continue;
        }
        static const char *const valued[] = { "--preset", "-o", "--out", "--rows", "--cols", "--seed",
                                              "--arch", "--weights", "--vocab", "--threads",
                                              "--outlier-channels" };
        int known = 0;
        for (size_t k = 0; k < sizeof valued / sizeof valued[0]; k++)
            known |= strcmp(a, valued[k]) == 0;
        if (!known)
            return bad(a, NULL, "one of --preset, --arch, --weights, --seed, --tied, --untied, --vocab, "
                       "--threads, --outlier-channels, --rows, --cols, -o, --overwrite, --quiet");
        if (i + 1 >= argc)
            return bad(a, NULL, "a value");
        if (!vt_opt_once(&seen, a)) /* -o and --out are one option */
            return bad(a, NULL, "at most once");
        const char *v = argv[++i];
        if (strcmp(a, "--preset") == 0)
            preset = v;
        else if (strcmp(a, "-o") == 0 || strcmp(a, "--out") == 0)
            out = v;
        else if (strcmp(a, "--arch") == 0)
            arch = v;
        else if (strcmp(a, "--weights") == 0)
            weights = v;
        else if (strcmp(a, "--vocab") == 0)
            vocab = v;
        else if (strcmp(a, "--rows") == 0) {
            if (!vt_parse_i64(v, 1, 65536, &rows))
                return bad(a, v, "an integer 1..65536");
            rows_set = 1;
        } else if (strcmp(a, "--cols") == 0) {
            if (!vt_parse_i64(v, 256, 65536, &cols) || cols % 256)
                return bad(a, v, "a multiple of 256 in 256..65536");
            cols_set = 1;
        } else if (strcmp(a, "--outlier-channels") == 0) {
            if (!vt_parse_i64(v, 0, VT_FIXTURE_MAX_OUTLIERS, &outliers))
                return bad(a, v, "an integer 0..64");
            outliers_set = 1;
        } else if (strcmp(a, "--threads") == 0) {
            if (!vt_parse_i64(v, 0, 64, &threads))
                return bad(a, v, "an integer 0..64 (0: one per CPU)");
            threads_set = 1;
        } else if (!vt_parse_u64(v, &seed)) /* --seed */
            return bad(a, v, "an unsigned 64-bit integer");
    }
    if (!preset)
        return bad("--preset", NULL, arch && strcmp(arch, "qwen35") == 0 ? "tiny or bench-0.8b"
                                                                        : "codecs, tiny, small or bench-0.6b");
    if (!out)
        return bad("-o", NULL, "an output path");

    vt_error err;
    vt_error_clear(&err);
    /* Refused before minutes of work: OUT existing (without --overwrite) or
     * naming the vocabulary the fixture reads. */
    int q35 = arch && strcmp(arch, "qwen35") == 0;
    const char *in_vocab = vocab ? vocab : strcmp(preset, "codecs") == 0 ? NULL
                                   : q35 ? vt_qwen35_default_vocab() : vt_qwen3_default_vocab();
    const vt_publish_opts po = { .overwrite = overwrite, .inputs = &in_vocab, .n_inputs = in_vocab ? 1 : 0 };
    if (vt_publish_check(&out, 1, &po, &err) != VT_OK) {
        fprintf(stderr, "vt fixture make: %s\n", err.msg);
        return 2;
    }
    if (strcmp(preset, "codecs") == 0) {
        if (arch)
            return bad("--arch", arch, "no --arch with --preset codecs");
        if (weights || vocab || tied >= 0 || threads_set || outliers_set)
            return bad(weights ? "--weights" : vocab ? "--vocab" : tied >= 0 ? (tied ? "--tied" : "--untied")
                                                     : threads_set ? "--threads" : "--outlier-channels",
                       NULL, "a model preset (qwen3: tiny, small, bench-0.6b; qwen35: tiny, bench-0.8b), "
                       "not codecs");
        vt_ggml *g = vt_ggml_open(NULL, &err);
        if (!g || vt_fixture_make_codecs(g, rows, cols, seed, out, &po, &err)) {
            fprintf(stderr, "%s\n", err.msg);
            vt_ggml_free(g);
            return err.code ? err.code : 2;
        }
        vt_ggml_free(g);
        printf("%s\n", out);
        return 0;
    }

    if (arch && strcmp(arch, "qwen3") != 0 && strcmp(arch, "qwen35") != 0)
        return bad("--arch", arch, "qwen3 or qwen35");
    int qwen35 = arch && strcmp(arch, "qwen35") == 0;
    vt_qwen3_fixture_opts o3;
    vt_qwen35_fixture_opts o35;
    memset(&o3, 0, sizeof o3);
    memset(&o35, 0, sizeof o35);
    if (qwen35 ? !vt_qwen35_preset(preset, &o35.shape) : !vt_qwen3_preset(preset, &o3.shape))
        return bad("--preset", preset, qwen35 ? "tiny or bench-0.8b (qwen35)"
                                              : "codecs, tiny, small or bench-0.6b");
    if (rows_set || cols_set)
        return bad(rows_set ? "--rows" : "--cols", NULL, "--preset codecs (the model presets fix their shapes)");
    const int q4_k_m = weights && strcmp(weights, "Q4_K_M") == 0;
    const vt_codec *c = vt_codec_by_name(q4_k_m ? "Q4_K" : weights ? weights : "F32");
    if (!c || !c->decode_f32 || c->type == VT_TYPE_Q8_K)
        return bad("--weights", weights, "a weight codec with a decoder from 'vt codec list' (F32, F16, BF16, "
                   "Q8_0, Q4_K, Q6_K, IQ4_XS, IQ2_XXS...), or the mix Q4_K_M");
    if (tied >= 0) {
        o3.shape.tied = tied;
        o35.shape.tied = tied;
    }
    o3.weights_type = o35.weights_type = (int)c->type;
    o3.mix = o35.mix = q4_k_m ? VT_MIX_Q4_K_M : VT_MIX_UNIFORM;
    o3.outlier_channels = o35.outlier_channels = (int)outliers;
    o3.seed = o35.seed = seed;
    o3.vocab_path = o35.vocab_path = vocab;
    o3.n_threads = o35.n_threads = (int)threads;
    vt_progress progress;
    vt_progress_init(&progress, "vt fixture make", quiet);
    o3.progress = o35.progress = &progress;
    o3.publish = o35.publish = &po;

    vt_ggml *g = vt_ggml_open(NULL, &err);
    if (!g || (qwen35 ? vt_fixture_make_qwen35(g, &o35, out, &err) : vt_fixture_make_qwen3(g, &o3, out, &err))) {
        fprintf(stderr, "%s\n", err.msg);
        vt_ggml_free(g);
        return err.code ? err.code : 2;
    }
    vt_ggml_free(g);
    printf("%s\n", out);
    return 0;
}
