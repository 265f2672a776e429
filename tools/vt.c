/* vt: one executable, one subcommand per concern. Called as vt-capture,
 * vt-neartie or vt-seal (links to vt) it runs that subcommand directly. */
#include "cmds.h"

#include <stdio.h>
#include <string.h>

typedef struct vt_subcommand {
    const char *name;    /* vt NAME ... */
    const char *alias;   /* argv[0] basename that selects it, or NULL */
    int (*run)(int argc, char **argv);
    const char *summary;
} vt_subcommand;

static const vt_subcommand subcommands[] = {
    { "gguf", NULL, vt_cmd_gguf, "inspect and rewrite GGUF files" },
    { "codec", NULL, vt_cmd_codec, "check every codec bit for bit against ggml" },
    { "fixture", NULL, vt_cmd_fixture, "generate GGUF fixtures" },
    { "run", NULL, vt_cmd_run, "run one runner (engine, llamacpp, transformers, openai or plugin:PATH.so) on a prompt" },
    { "agree", NULL, vt_cmd_agree, "the engine against llama.cpp on one model, near-tie rule" },
    { "kld", NULL, vt_cmd_kld, "corpus perplexity and KL divergence, the engine against llama.cpp, exact" },
    { "bench", NULL, vt_cmd_bench, "the engine's speed against llama.cpp's, with the decode bandwidth limit" },
    { "op", NULL, vt_cmd_op, "the engine's matrix products against ggml's CPU kernels, op by op" },
    { "seal", "vt-seal", vt_cmd_seal, "create, verify and extract sealed evidence archives" },
    { "provenance", NULL, vt_cmd_provenance, "hashes, manifests, runtime identity, wheel/npm verification" },
    { "capture", "vt-capture", vt_cmd_capture, "seeded repeated runs with verified identities, sealed" },
    { "neartie", "vt-neartie", vt_cmd_neartie, "score a local capture against an oracle's, near-tie rule, CI gate" },
    { "export", NULL, vt_cmd_export, "a GGUF model as safetensors + config.json for transformers" },
};
enum { N_SUBCOMMANDS = (int)(sizeof subcommands / sizeof subcommands[0]) };

static void usage(FILE *f)
{
    fprintf(f, "usage: vt COMMAND [ARGS...]\n\ncommands:\n");
    for (int i = 0; i < N_SUBCOMMANDS; i++)
        fprintf(f, "  %-10s %s\n", subcommands[i].name, subcommands[i].summary);
    fprintf(f, "\n'vt COMMAND --help' describes each; 'vt --version' prints the version and git revision.\n"
               "Exit codes: 0 ok, 1 check failed, 2 bad input.\n");
}

int main(int argc, char **argv)
{
    const char *self = strrchr(argv[0], '/');
    self = self ? self + 1 : argv[0];
    for (int i = 0; i < N_SUBCOMMANDS; i++)
        if (subcommands[i].alias && strcmp(self, subcommands[i].alias) == 0)
            return subcommands[i].run(argc, argv);
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "help") == 0) {
        usage(stdout);
        return 0;
    }
    if (strcmp(argv[1], "--version") == 0) {
        if (argc > 2) {
            fprintf(stderr, "vt: --version: '%s': expected no further argument\n", argv[2]);
            return 2;
        }
        /* The revision is the one the build was configured at. */
        printf("vt %s (git %s)\n", VT_VERSION, VT_GIT_REV);
        return 0;
    }
    for (int i = 0; i < N_SUBCOMMANDS; i++)
        if (strcmp(argv[1], subcommands[i].name) == 0)
            return subcommands[i].run(argc - 1, argv + 1);
    fprintf(stderr, "vt: unknown command '%s': expected one of gguf, codec, fixture, run, agree, kld, op, seal, provenance, capture, neartie, export\n", argv[1]);
    return 2;
}
