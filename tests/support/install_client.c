/* A program of one's own against an installed libvt (tests/install.sh
 * builds it through pkg-config, once against libvt.so and once against
 * libvt.a): the engine runner, found in the runner table, generates N
 * greedy tokens after the prompt's ids; printed on one line.
 * usage: install_client MODEL.gguf IDS N */
#include <vt/common/vt_error.h>
#include <vt/engine/runner.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: install_client MODEL.gguf IDS N\n");
        return 2;
    }
    int32_t prompt[64], out[64];
    int32_t np = 0;
    for (char *p = argv[2]; *p && np < 64;) {
        char *end;
        prompt[np++] = (int32_t)strtol(p, &end, 10);
        if (end == p || (*end && *end != ',')) {
            fprintf(stderr, "install_client: IDS '%s': expected comma-separated ids\n", argv[2]);
            return 2;
        }
        p = *end ? end + 1 : end;
    }
    const int32_t n = (int32_t)atoi(argv[3]);
    if (np < 1 || n < 1 || n > 64) {
        fprintf(stderr, "install_client: expected 1..64 ids and 1 <= N <= 64\n");
        return 2;
    }
    const vt_runner_ops *ops = vt_runner_find("engine");
    if (!ops) {
        fprintf(stderr, "install_client: no engine runner in libvt\n");
        return 1;
    }
    vt_runner_settings s;
    vt_runner_settings_default(&s);
    s.model_path = argv[1];
    vt_error err;
    vt_error_clear(&err);
    vt_runner *r = vt_runner_open(ops, &s, &err);
    if (!r || vt_runner_generate(r, prompt, np, n, out, NULL, &err) != VT_OK) {
        fprintf(stderr, "install_client: %s\n", err.msg);
        vt_runner_close(r);
        return 2;
    }
    printf("tokens:");
    for (int32_t i = 0; i < n; i++)
        printf(" %d", (int)out[i]);
    printf("\n");
    vt_runner_close(r);
    return 0;
}
