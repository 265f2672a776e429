/* vt-neartie over hostile inputs (compare/neartie_report.h): its reading of
 * the local capture, the oracle capture and the prefix scores, the guards,
 * the scoring and every text a report is (JSON, JUnit, in-toto, HTML, the
 * table), built in memory and never published. vt reads no report back;
 * this is what a report is made of. The bytes are the three documents,
 * NUL-separated (canonical JSON holds no NUL), each re-sealed (fz_reseal).
 * Unverified evidence and a matmul difference are allowed, as
 * --allow-unverified --allow-diff matmul do, so that the seeds (vt's engine
 * against itself, two repeats) are compared rather than refused. */
#define VT_FUZZ_WANTS_RESEAL
#include "fuzz_util.h"

#include "compare/neartie_report.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const names[3] = { "local.json", "oracle.json", "prefix.json" };
    char path[3][128], out[4][128];
    const uint8_t *p = data, *end = data + size;
    for (int i = 0; i < 3; i++) {
        const uint8_t *stop = i < 2 ? memchr(p, 0, (size_t)(end - p)) : end;
        if (!stop)
            return 0;
        size_t len = (size_t)(stop - p);
        char *text = malloc(len ? len : 1);
        if (!text)
            abort();
        memcpy(text, p, len);
        fz_reseal(text, len);
        fz_write(fz_path(names[i], path[i], sizeof path[i]), text, len);
        free(text);
        p = stop + (i < 2);
    }
    static const char *const allow[] = { "matmul" };
    vt_nt_opts o;
    vt_nt_opts_default(&o);
    o.local = path[0];
    o.oracle = path[1];
    o.prefix_scores = path[2];
    /* named so that vt_nt_compare builds them; only vt_nt_publish would write them */
    o.out = fz_path("r.json", out[0], sizeof out[0]);
    o.junit = fz_path("r.xml", out[1], sizeof out[1]);
    o.intoto = fz_path("r.intoto.json", out[2], sizeof out[2]);
    o.html = fz_path("r.html", out[3], sizeof out[3]);
    o.guard.allow = allow;
    o.guard.n_allow = 1;
    o.guard.allow_unverified = 1;
    vt_error err;
    vt_neartie *c = vt_nt_open(&o, &err);
    if (!c)
        return 0;
    if (vt_nt_guard(c, &err) == VT_OK && vt_nt_n_refusals(c) == 0 && vt_nt_compare(c, &err) == VT_OK) {
        size_t n = 0;
        const char *report = vt_nt_report_json(c, &n);
        if (!report || n == 0 || !vt_nt_junit(c, &n) || !vt_nt_table(c))
            abort(); /* a comparison that ran has its texts */
    }
    vt_nt_free(c);
    return 0;
}
