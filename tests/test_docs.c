/* README and every --help agree with the code: each option README's
 * command list gives is in that command's --help, and each option a
 * --help names is one the command's parser knows (it is not refused as an
 * unknown option). */
#include <criterion/criterion.h>

#include "tests/support/vt_test.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Whether the option at text + i is named as another tool's ("vt-capture
 * --score-prefix-of", "vt capture --x"): the tool's name just before it. */
static int foreign(const char *text, size_t i)
{
    size_t b = i;
    while (b > 0 && text[b - 1] == ' ')
        b--;
    size_t w = b;
    while (w > 0 && (isalnum((unsigned char)text[w - 1]) || text[w - 1] == '-'))
        w--;
    if (b - w >= 4 && strncmp(text + w, "vt-", 3) == 0)
        return 1;
    return w >= 3 && strncmp(text + w - 3, "vt ", 3) == 0;
}

/* The --options in text, each once, as "--a --b ..." with a space on both
 * sides of each (so that strstr(" --a ") finds whole names); with
 * own_only, not those named as another tool's. */
static void options_in_of(const char *text, size_t n, char *out, size_t cap, int own_only)
{
    size_t k = snprintf(out, cap, " ");
    for (size_t i = 0; i + 2 < n; i++) {
        if (text[i] != '-' || text[i + 1] != '-' || !islower((unsigned char)text[i + 2]) ||
            (i > 0 && (isalnum((unsigned char)text[i - 1]) || text[i - 1] == '-')) || (own_only && foreign(text, i)))
            continue;
        size_t j = i + 2;
        while (j < n && (islower((unsigned char)text[j]) || isdigit((unsigned char)text[j]) || text[j] == '-'))
            j++;
        while (j > i + 2 && text[j - 1] == '-')
            j--;
        char opt[64];
        snprintf(opt, sizeof opt, " %.*s ", (int)(j - i), text + i);
        if (!strstr(out, opt) && k + strlen(opt) < cap)
            k += (size_t)snprintf(out + k, cap - k, "%s", opt + 1);
        i = j;
    }
}

static void options_in(const char *text, size_t n, char *out, size_t cap) { options_in_of(text, n, out, cap, 0); }

/* A command's output (stdout and stderr). */
static char *run_vt(const char *args, int *rc)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "%s </dev/null 2>&1", args);
    FILE *p = popen(cmd, "r");
    cr_assert_not_null(p);
    size_t cap = 1 << 16, n = 0;
    char *out = malloc(cap);
    cr_assert_not_null(out);
    for (size_t got; (got = fread(out + n, 1, cap - 1 - n, p)) > 0;)
        n += got;
    out[n] = '\0';
    *rc = vt_test_exit(pclose(p), cmd, out);
    return out;
}

/* README's command list: one entry per command line ("    vt ..." or
 * "    vt-..."), with its continuation lines of options. */
typedef struct entry {
    char words[64];   /* "vt run", "vt-capture", "vt gguf info" */
    char help[128];   /* the command whose --help documents it */
    char opts[2048];  /* its options, " --a --b " */
} entry;

static int readme_entries(entry *v, int cap)
{
    size_t n;
    char *readme = vt_test_slurp(VT_SOURCE_DIR "/README.md", &n);
    cr_assert_not_null(readme);
    char *start = strstr(readme, "\n## Commands\n");
    cr_assert_not_null(start, "README has no Commands section");
    char *end = strstr(start, "\nExit codes");
    cr_assert_not_null(end);
    int k = -1, open = 0;
    for (char *line = start + 1; line < end;) {
        char *nl = strchr(line, '\n');
        size_t len = (size_t)(nl - line);
        int indent = 0;
        while (line[indent] == ' ')
            indent++;
        if (indent == 4 && strncmp(line + 4, "vt", 2) == 0 && k + 1 < cap) {
            open = 1;
            entry *e = &v[++k];
            memset(e, 0, sizeof *e);
            /* The command's words: up to the first argument (upper case, an option, a bracket). */
            const char *p = line + 4;
            size_t w = 0;
            int words = 0;
            while (*p && *p != '\n' && !isupper((unsigned char)*p) && *p != '-' && *p != '[' && *p != '(' &&
                   strncmp(p, "  ", 2) != 0 && w + 1 < sizeof e->words) {
                if (*p == ' ')
                    words++;
                e->words[w++] = *p++;
                if (*p == '-' && p[-1] != ' ')
                    e->words[w++] = *p++;
            }
            while (w && e->words[w - 1] == ' ')
                w--;
            e->words[w] = '\0';
            /* Its help: "vt-x --help" for a vt-x link, else "vt y --help". */
            char first[64];
            snprintf(first, sizeof first, "%.*s", (int)strcspn(e->words + 3, " "), e->words + 3);
            snprintf(e->help, sizeof e->help, "'%s'%s%s --help", VT_BIN, e->words[2] == '-' ? "-" : " ", first);
            (void)words;
            /* Options on the command line, before its description column. */
            char *desc = strstr(line + 4, "    ");
            size_t upto = desc && desc < nl ? (size_t)(desc - line) : len;
            options_in(line, upto, e->opts, sizeof e->opts);
        } else if (indent == 4) {
            open = 0; /* another tool's line (scripts/...): not a vt command */
            line = nl + 1;
            continue;
        } else if (k >= 0 && open && indent > 4 && indent < 20 && (line[indent] == '[' || line[indent] == '(')) {
            char more[2048];
            char *desc = strstr(line + indent, "    ");
            size_t upto = desc && desc < nl ? (size_t)(desc - line) : len;
            options_in(line, upto, more, sizeof more);
            strncat(v[k].opts, more + 1, sizeof v[k].opts - strlen(v[k].opts) - 1);
        }
        line = nl + 1;
    }
    free(readme);
    return k + 1;
}

Test(docs, readme_options_are_in_each_help)
{
    entry v[32];
    int n = readme_entries(v, 32);
    cr_assert_geq(n, 10, "only %d commands found in README", n);
    int checked = 0;
    for (int i = 0; i < n; i++) {
        int rc;
        char *help = run_vt(v[i].help, &rc);
        cr_assert_eq(rc, 0, "%s: exit %d", v[i].help, rc);
        char known[4096];
        options_in(help, strlen(help), known, sizeof known);
        for (char *o = strtok(v[i].opts, " "); o; o = strtok(NULL, " ")) {
            char w[80];
            snprintf(w, sizeof w, " %s ", o);
            cr_assert(strstr(known, w), "README documents %s for '%s', which '%s' does not:\n%s", o, v[i].words,
                      v[i].help, help);
            checked++;
        }
        free(help);
    }
    cr_assert_geq(checked, 40, "only %d options checked", checked);
}

/* Each --help's options, given to its command: never refused as unknown. */
Test(docs, every_option_a_help_names_is_known_to_its_parser)
{
    static const char *const commands[][2] = {
        { "run --help", "run" },
        { "agree --help", "agree" },
        { "bench --help", "bench" },
        { "capture --help", "capture" },
        { "neartie --help", "neartie" },
        { "seal --help", "seal create /nonexistent|seal verify /nonexistent|seal extract /nonexistent" },
        { "codec --help", "codec check" },
        { "fixture --help", "fixture make" },
        { "gguf --help", "gguf info /nonexistent|gguf rewrite" },
    };
    int checked = 0;
    for (size_t c = 0; c < sizeof commands / sizeof commands[0]; c++) {
        char cmd[256];
        int rc;
        snprintf(cmd, sizeof cmd, "'%s' %s", VT_BIN, commands[c][0]);
        char *help = run_vt(cmd, &rc);
        cr_assert_eq(rc, 0, "%s", cmd);
        char opts[4096];
        options_in_of(help, strlen(help), opts, sizeof opts, 1);
        for (char *o = strtok(opts, " "); o; o = strtok(NULL, " ")) {
            if (strcmp(o, "--help") == 0)
                continue;
            /* A value after it, in case it takes one, then an option no
             * parser knows, so that nothing runs: an option the parser does
             * not know is refused naming it. Some subcommand ("a|b") of the
             * tool must know it. */
            char probes[256], *save = NULL, last[1024] = "";
            snprintf(probes, sizeof probes, "%s", commands[c][1]);
            int known = 0;
            for (char *pr = strtok_r(probes, "|", &save); pr && !known; pr = strtok_r(NULL, "|", &save)) {
                snprintf(cmd, sizeof cmd, "'%s' %s %s 1 --zz-not-an-option", VT_BIN, pr, o);
                char *out = run_vt(cmd, &rc);
                char a[96], b[96];
                snprintf(a, sizeof a, "option '%s': expected one of the options", o);
                snprintf(b, sizeof b, "unknown option '%s'", o);
                known = !strstr(out, a) && !strstr(out, b);
                snprintf(last, sizeof last, "%s", out);
                free(out);
            }
            cr_assert(known, "'%s' names %s, which its parser refuses: %s", commands[c][0], o, last);
            checked++;
        }
        free(help);
    }
    cr_assert_geq(checked, 50, "only %d options checked", checked);
}

/* Every subcommand vt's own usage lists has a --help that exits 0 and ends
 * its description with an example of that very command ("example: vt NAME"
 * or, for the linked tools, "example: vt-NAME"); `vt --version` names the
 * version and the git revision, and takes nothing after it. */
Test(docs, every_subcommand_help_has_an_example_and_vt_has_a_version)
{
    int rc;
    char cmd[512];
    snprintf(cmd, sizeof cmd, "'%s' --help", VT_BIN);
    char *top = run_vt(cmd, &rc);
    cr_assert_eq(rc, 0, "%s", cmd);
    char *list = strstr(top, "commands:\n");
    cr_assert_not_null(list, "%s", top);
    int n = 0;
    for (char *line = strtok(list + 10, "\n"); line && line[0] == ' '; line = strtok(NULL, "\n")) {
        char name[32];
        cr_assert_eq(sscanf(line, " %31s", name), 1, "%s", line);
        char c2[512];
        snprintf(c2, sizeof c2, "'%s' %s --help", VT_BIN, name);
        char *help = run_vt(c2, &rc);
        cr_assert_eq(rc, 0, "%s: exit %d", c2, rc);
        char want1[64], want2[64];
        snprintf(want1, sizeof want1, "example: vt %s", name);
        snprintf(want2, sizeof want2, "example: vt-%s", name);
        cr_assert(strstr(help, want1) || strstr(help, want2), "'vt %s --help' has no example of itself:\n%s", name,
                  help);
        free(help);
        n++;
    }
    cr_assert_geq(n, 12, "only %d subcommands listed:\n%s", n, top);
    free(top);
    snprintf(cmd, sizeof cmd, "'%s' --version", VT_BIN);
    char *v = run_vt(cmd, &rc);
    cr_assert_eq(rc, 0, "%s", cmd);
    char ver[32], rev[64], tail[8];
    cr_assert_eq(sscanf(v, "vt %31s (git %63[^)])%7s", ver, rev, tail), 2, "vt --version: %s", v);
    cr_assert(strlen(rev) == 40 || !strcmp(rev, "unknown"), "revision %s", rev);
    free(v);
    snprintf(cmd, sizeof cmd, "'%s' --version extra", VT_BIN);
    free(run_vt(cmd, &rc));
    cr_assert_eq(rc, 2, "vt --version extra: exit %d", rc);
}
