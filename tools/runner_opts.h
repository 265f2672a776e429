/* Command-line options shared by every tool that opens a runner (run, agree,
 * capture): one parser, so every tool spells and checks them alike. */
#ifndef VT_TOOLS_RUNNER_OPTS_H
#define VT_TOOLS_RUNNER_OPTS_H

#include "../engine/runner.h"

/* If opt is a runner option (--mode, --cache-dtype, --matmul, --threads,
 * --n-ctx, --n-batch, --seed, --dtype, --attention, --temperature, --top-p, --min-p, --sample-top-k),
 * parse val into s and return 1; for a bad value print one line
 * "TOOL: OPT 'VAL': expected ..." and return -1; return 0 if opt is not one. */
int vt_runner_option(const char *tool, const char *opt, const char *val, vt_runner_settings *s);

/* The two runners of a comparison (vt agree, vt kld): both known, and not
 * one runner twice (with the same settings that is one computation run
 * twice, which agrees with itself by construction). --backend applies to
 * the local runner; the oracle computes on the CPU, so the engine on the GPU
 * against the engine (on the CPU) is a pair. 0, or 2 after one line
 * "TOOL: ..." on stderr. */
int vt_runner_pair(const char *tool, const char *local, const char *oracle, vt_backend local_backend,
                   const vt_runner_ops **lo, const vt_runner_ops **oo);

/* The usage lines for those options. */
extern const char vt_runner_options_usage[];

#endif
