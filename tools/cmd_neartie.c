/* vt neartie (vt-neartie): a local capture against an oracle capture under
 * the near-tie rule, with the oracle's actual-prefix scores; guards, report,
 * JUnit and the CI gate (compare/neartie_report.h). */
#include "cmds.h"

#include "../capture/capture.h"
#include "../common/vt_parse.h"
#include "../common/vt_progress.h"
#include "../common/vt_reasons.h"
#include "../compare/neartie_report.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usage_text[] =
    "usage: vt-neartie --local L.json --oracle O.json\n"
    "                  (--prefix-scores S.json [--prefix-scores S2.json [--prefix-scores S3.json]]\n"
    "                   | --score-with llamacpp --model X.gguf [--threads N]\n"
    "                   [--scores-out S.json] [--package PKG.tgz [--package-root DIR] [--lock L]])\n"
    "                  [--threshold-mnats 500] [--out R.json] [--junit J.xml] [--intoto ST.json]\n"
    "                  [--html R.html] [--json] [--overwrite]\n"
    "                  [--require-strict N] [--max-failed N] [--allow-diff FIELD]...\n"
    "                  [--mode M] [--cache-dtype D] [--matmul M] [--top-gaps N] [--allow-unverified] [--quiet]\n"
    "\n"
    "Scores the local capture's repeat-0 token streams against the oracle capture's under the\n"
    "near-tie rule. The oracle's actual-prefix scores (the oracle teacher-forced on the local\n"
    "streams: vt-capture --score-prefix-of L.json) come from --prefix-scores, or are computed\n"
    "here by --score-with RUNNER on --model with the oracle's resolved settings. At each position\n"
    "gap = logp(oracle argmax) - logp(local token), in milli-nats. A prompt is strict (same\n"
    "tokens), near-tie-only (not strict, every gap <= --threshold-mnats) or failed.\n"
    "The oracle's noise: --score-with scores the local streams in three shapes (replay, as\n"
    "generation ran: the gaps shown; batched, as a prefill; and eager, one token per evaluation\n"
    "from the first prompt token, where the oracle ran in production mode), and the oracle's own\n"
    "streams batched (its noise floor, reported only). A position above the threshold in some\n"
    "shape and within it in another is within the oracle's noise (the oracle cannot decide it);\n"
    "a prompt with such positions and none above in every shape is within-noise, not failed.\n"
    "Up to three --prefix-scores files (each shape at most once) do the same; with one, every\n"
    "gap above counts as failed.\n"
    "\n"
    "Before anything is scored every input is read once by the one capture reader (seals, schema,\n"
    "canonical form, side files, determinism re-checked from the runs, prefix-score values checked),\n"
    "and the guards (README, \"The guards of vt-neartie\") refuse with exit 2, each reason naming\n"
    "its rule: the same capture twice (one file, one seal, or one computation run twice), a\n"
    "capture that is not strict evidence (unless --allow-unverified: the report then says so),\n"
    "runs with errors, repeats that differ, different prompt sets, models, vocabularies (n_vocab,\n"
    "pre-tokenizer, vocab_sha256), non-greedy sampling, repeat counts, mode / cache dtype / matmul\n"
    "(or other than --mode/--cache-dtype/--matmul declare), capacity or other settings, different\n"
    "workloads; and prefix scores not bound to the local capture, or not the oracle's computation\n"
    "(its runtime in depth: runner, version, backend, device, library, binary, loaded objects,\n"
    "package; and its configuration), or the local capture's own. --allow-diff FIELD lets FIELD\n"
    "differ on purpose (model.files, model.arch, model.revision, model.gguf, repetitions, mode,\n"
    "cache_dtype, matmul, dtype, attention, n_ctx, max_tokens, threads, n_batch, seed,\n"
    "logprobs_top_k, sampling.top_k, sampling.top_p, sampling.min_p, determinism); the report\n"
    "records it.\n"
    "--score-with runs the scorer here: give it the oracle's package (--package) so that its\n"
    "runtime is the oracle's. A prompt with no position compared fails. Where both captures have\n"
    "full-logits side files, KL(oracle||local) and related metrics are computed over the positions\n"
    "whose prefixes are identical.\n"
    "\n"
    "Prints a table on stdout; --out writes a sealed vt.neartie-report/4 (canonical JSON),\n"
    "--junit a JUnit XML file (one test case per prompt), --intoto the verdict as an in-toto\n"
    "Statement v1 with the test-result predicate (subjects: the report, both captures and the\n"
    "prefix-scores files, by sha256; result PASSED or FAILED as the gate; a test per prompt),\n"
    "--html R.html a self-contained page of the same (inline SVG and CSS, nothing from the\n"
    "network): the summary, a strip per prompt with every position's gap coloured, its tokens\n"
    "on hover, the first divergence marked, a histogram of gaps, KL per position where the\n"
    "captures have logits, both captures' identities, settings and seals; all published\n"
    "together. --json prints the report (as --out writes it) on stdout instead of the table.\n"
    "Gate: at least --require-strict N strict prompts (default 0), at most --max-failed N failed\n"
    "(default 0). Exit: 0 gate passed, 1 gate failed, 2 bad usage, bad input or a guard refused.\n"
    "On a terminal, --score-with shows a progress line on stderr; --quiet: none.\n"
    "example: vt-neartie --local engine.json --oracle oracle.json --prefix-scores prefix.json \\\n"
    "             --out report.json --junit report.xml --intoto report.intoto.json --html report.html \\\n"
    "             --require-strict 16\n";

static int bad(const char *opt, const char *val, const char *expected)
{
    fprintf(stderr, "vt-neartie: %s '%s': expected %s\n", opt, val ? val : "", expected);
    return 2;
}

int vt_cmd_neartie(int argc, char **argv)
{
    vt_nt_opts o;
    vt_nt_opts_default(&o);
    const char *allow[64];
    int quiet = 0, json = 0;
    static const char *const repeatable[] = { "--allow-diff", "--prefix-scores", NULL };
    vt_opt_seen seen = { .repeatable = repeatable };
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            fputs(usage_text, stdout);
            return 0;
        }
        if (strcmp(a, "--overwrite") == 0) {
            o.overwrite = 1;
            continue;
        }
        if (strcmp(a, "--allow-unverified") == 0) {
            o.guard.allow_unverified = 1;
            continue;
        }
        if (strcmp(a, "--quiet") == 0) {
            quiet = 1;
            continue;
        }
        if (strcmp(a, "--json") == 0) {
            json = 1;
            continue;
        }
        const char *v = i + 1 < argc ? argv[++i] : NULL;
        if (!v)
            return bad(a, "", "a value after the option");
        if (!vt_opt_once(&seen, a))
            return bad(a, v, "the option once (given twice)");
        int64_t n;
        if (strcmp(a, "--local") == 0)
            o.local = v;
        else if (strcmp(a, "--oracle") == 0)
            o.oracle = v;
        else if (strcmp(a, "--prefix-scores") == 0) {
            if (o.prefix_scores_c)
                return bad(a, v, "at most three (replay, batched and eager, each at most once)");
            *(!o.prefix_scores ? &o.prefix_scores : !o.prefix_scores_b ? &o.prefix_scores_b : &o.prefix_scores_c) = v;
        }
        else if (strcmp(a, "--score-with") == 0)
            o.score_with = v;
        else if (strcmp(a, "--model") == 0)
            o.model = v;
        else if (strcmp(a, "--out") == 0 || strcmp(a, "-o") == 0)
            o.out = v;
        else if (strcmp(a, "--junit") == 0)
            o.junit = v;
        else if (strcmp(a, "--intoto") == 0)
            o.intoto = v;
        else if (strcmp(a, "--html") == 0)
            o.html = v;
        else if (strcmp(a, "--scores-out") == 0)
            o.scores_out = v;
        else if (strcmp(a, "--package") == 0)
            o.package = v;
        else if (strcmp(a, "--package-root") == 0)
            o.package_root = v;
        else if (strcmp(a, "--lock") == 0)
            o.lock = v;
        else if (strcmp(a, "--threshold-mnats") == 0) {
            if (!vt_parse_f64(v, 0, 1e6, &o.threshold_mnats))
                return bad(a, v, "a number in 0..1000000 (milli-nats)");
        } else if (strcmp(a, "--threads") == 0) {
            if (!vt_parse_i64(v, 1, 256, &n))
                return bad(a, v, "an integer in 1..256");
            o.threads = (int32_t)n;
        } else if (strcmp(a, "--require-strict") == 0 || strcmp(a, "--max-failed") == 0) {
            if (!vt_parse_i64(v, 0, INT32_MAX, &n))
                return bad(a, v, "a non-negative integer");
            *(strcmp(a, "--max-failed") == 0 ? &o.max_failed : &o.require_strict) = (int32_t)n;
        } else if (strcmp(a, "--top-gaps") == 0) {
            if (!vt_parse_i64(v, 0, 1000, &n))
                return bad(a, v, "an integer in 0..1000");
            o.top_gaps = (int32_t)n;
        } else if (strcmp(a, "--allow-diff") == 0) {
            if (o.guard.n_allow == (int)(sizeof allow / sizeof allow[0]))
                return bad(a, v, "at most 64 of them");
            allow[o.guard.n_allow++] = v;
            o.guard.allow = allow;
        } else if (strcmp(a, "--mode") == 0) {
            if (strcmp(v, "production") && strcmp(v, "eager"))
                return bad(a, v, "production or eager (the mode both captures must have resolved)");
            o.guard.mode = v;
        } else if (strcmp(a, "--cache-dtype") == 0) {
            if (strcmp(v, "f32") && strcmp(v, "bf16") && strcmp(v, "fp8_e4m3"))
                return bad(a, v, "f32, bf16 or fp8_e4m3 (the resolved cache dtype both captures must have)");
            o.guard.cache_dtype = v;
        } else if (strcmp(a, "--matmul") == 0) {
            if (strcmp(v, "exact") && strcmp(v, "q8"))
                return bad(a, v, "exact or q8 (the compute path both captures must have resolved)");
            o.guard.matmul = v;
        } else
            return bad("option", a, "one of the options in 'vt-neartie --help'");
    }

    vt_error err;
    vt_error_clear(&err);
    vt_progress progress;
    vt_progress_init(&progress, "vt-neartie scoring", quiet);
    o.progress = &progress;
    vt_neartie *c = vt_nt_open(&o, &err);
    if (!c) {
        fprintf(stderr, "vt-neartie: %s\n", err.msg);
        return 2;
    }
    int rc = vt_nt_guard(c, &err);
    if (rc) {
        fprintf(stderr, "vt-neartie: %s\n", err.msg);
        vt_nt_free(c);
        return 2;
    }
    if (vt_nt_n_refusals(c)) {
        vt_reasons_print(vt_nt_refusals(c), stderr, "vt-neartie", "refused");
        vt_nt_free(c);
        return 2;
    }
    rc = vt_nt_compare(c, &err);
    vt_progress_end(&progress);
    if (rc == VT_OK)
        rc = vt_nt_publish(c, &err);
    if (rc) {
        fprintf(stderr, "vt-neartie: %s\n", err.msg);
        vt_nt_free(c);
        return 2;
    }
    /* With --json stdout holds the report alone; what was written goes to stderr. */
    FILE *said = json ? stderr : stdout;
    if (json)
        fwrite(vt_nt_report_json(c, NULL), 1, strlen(vt_nt_report_json(c, NULL)), stdout);
    else
        fputs(vt_nt_table(c), stdout);
    if (o.out)
        fprintf(said, "wrote %s (vt.neartie-report/4)\n", o.out);
    if (o.junit)
        fprintf(said, "wrote %s (JUnit)\n", o.junit);
    if (o.intoto)
        fprintf(said, "wrote %s (in-toto Statement v1, test-result predicate)\n", o.intoto);
    if (o.html)
        fprintf(said, "wrote %s (HTML)\n", o.html);
    if (o.scores_out)
        fprintf(said, "wrote %s (" VT_PREFIX_SCORES_SCHEMA ")\n", o.scores_out);
    vt_nt_totals t;
    vt_nt_totals_get(c, &t);
    vt_nt_free(c);
    return t.gate_passed ? 0 : 1;
}
