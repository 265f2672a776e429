/* vt-neartie --html: the comparison as one self-contained page (inline CSS
 * and SVG; no script, no font or image from anywhere: a Content-Security-
 * Policy says so to the browser).
 *
 * What it shows, top to bottom: the verdict; the totals and one row per
 * prompt (the report's numbers: the page is built from the report as sealed,
 * and shows its seal); one strip per prompt with a cell per position
 * coloured by its gap (and, where both captures have full logits, a second
 * row by KL), the first divergence of the token streams marked, each cell's
 * tokens and numbers in its tooltip (SVG <title>); a histogram of gaps; KL per
 * position; the largest gaps; both captures' identities, settings and seals.
 *
 * Every text from an input (prompt ids, token texts, file names, identities)
 * is escaped; control bytes and bytes that are not UTF-8 are shown as \xNN. */
#include "neartie_internal.h"

#include "../capture/canonical_json.h"
#include "../common/vt_sbuf.h"
#include "../common/vt_utf8.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ text */

/* UTF-8 text into HTML text or an attribute value (control characters,
 * which esc_n writes as \xNN before they get here, become '?'). */
static void esc(vt_sbuf *b, const char *s)
{
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        switch (ch) {
        case '&': vt_sbuf_puts(b, "&amp;"); break;
        case '<': vt_sbuf_puts(b, "&lt;"); break;
        case '>': vt_sbuf_puts(b, "&gt;"); break;
        case '"': vt_sbuf_puts(b, "&quot;"); break;
        case '\'': vt_sbuf_puts(b, "&#39;"); break;
        default:
            if (ch < 0x20 || ch == 0x7f)
                vt_sbuf_add(b, "?", 1);
            else
                vt_sbuf_add(b, s, 1);
        }
    }
}

/* Any string from an input: well-formed UTF-8 as it is (escaped), control
 * bytes and bytes that are not UTF-8 as \xNN, so that nothing is lost. */
static void esc_n(vt_sbuf *b, const char *s, size_t n)
{
    for (size_t i = 0; i < n;) {
        unsigned char ch = (unsigned char)s[i];
        size_t k = vt_utf8_seq(s + i, n - i);
        if (k == 0 || ch < 0x20 || ch == 0x7f) {
            vt_sbuf_printf(b, "\\x%02x", ch);
            i++;
        } else if (k == 1) {
            char one[2] = { (char)ch, 0 };
            esc(b, one);
            i++;
        } else {
            vt_sbuf_add(b, s + i, k);
            i += k;
        }
    }
}

static void esc_bytes(vt_sbuf *b, const char *s) { esc_n(b, s, strlen(s)); }

/* A token as `760 " x"` (its text where there is a vocabulary), escaped. */
static void tok(vt_sbuf *b, vt_neartie *c, int32_t id)
{
    char raw[256];
    size_t n = 0;
    vt_sbuf_printf(b, "%d", id);
    if (vt_nt_tok_bytes(c, id, raw, sizeof raw, &n)) {
        vt_sbuf_puts(b, " &quot;");
        esc_n(b, raw, n);
        vt_sbuf_puts(b, "&quot;");
    }
}

static const cJSON *get(const cJSON *o, const char *k) { return cJSON_GetObjectItemCaseSensitive(o, k); }

/* A scalar JSON value as text (strings escaped); 0 for objects and arrays. */
static int scalar(vt_sbuf *b, const cJSON *v)
{
    char num[64];
    if (cJSON_IsString(v))
        esc_bytes(b, v->valuestring);
    else if (cJSON_IsNumber(v)) {
        /* Whole numbers as such; others to 6 significant digits (the exact
         * value is the report's, whose seal the page shows). */
        double x = v->valuedouble;
        if (x == floor(x) && fabs(x) < 1e15)
            snprintf(num, sizeof num, "%.0f", x);
        else
            snprintf(num, sizeof num, "%.6g", x);
        vt_sbuf_puts(b, num);
    } else if (cJSON_IsBool(v))
        vt_sbuf_puts(b, cJSON_IsTrue(v) ? "true" : "false");
    else if (cJSON_IsNull(v))
        vt_sbuf_puts(b, "null");
    else
        return 0;
    return 1;
}

/* Rows "path | value" for the scalars under v (objects followed, arrays of
 * scalars joined), at most *budget rows: identities can hold long lists. */
static void json_rows(vt_sbuf *b, const char *path, const cJSON *v, int *budget)
{
    if (!v || *budget <= 0)
        return;
    if (cJSON_IsObject(v)) {
        for (const cJSON *k = v->child; k; k = k->next) {
            char sub[512];
            snprintf(sub, sizeof sub, "%s%s%s", path, path[0] ? "." : "", k->string);
            json_rows(b, sub, k, budget);
        }
        return;
    }
    if (cJSON_IsArray(v)) {
        int all_scalar = 1, n = 0;
        for (const cJSON *e = v->child; e; e = e->next, n++)
            all_scalar &= !cJSON_IsObject(e) && !cJSON_IsArray(e);
        if (!all_scalar) {
            int i = 0;
            for (const cJSON *e = v->child; e && *budget > 0; e = e->next, i++) {
                char sub[512];
                snprintf(sub, sizeof sub, "%s[%d]", path, i);
                json_rows(b, sub, e, budget);
            }
            return;
        }
        (*budget)--;
        vt_sbuf_puts(b, "<tr><th>");
        esc_bytes(b, path);
        vt_sbuf_puts(b, "</th><td>");
        int i = 0;
        for (const cJSON *e = v->child; e && i < 16; e = e->next, i++) {
            if (i)
                vt_sbuf_puts(b, ", ");
            scalar(b, e);
        }
        if (n > 16)
            vt_sbuf_printf(b, ", … (%d in all)", n);
        if (n == 0)
            vt_sbuf_puts(b, "[]");
        vt_sbuf_puts(b, "</td></tr>\n");
        return;
    }
    (*budget)--;
    vt_sbuf_puts(b, "<tr><th>");
    esc_bytes(b, path);
    vt_sbuf_puts(b, "</th><td>");
    scalar(b, v);
    vt_sbuf_puts(b, "</td></tr>\n");
}

/* ------------------------------------------------------------ colours */

typedef struct rgb {
    int r, g, b;
} rgb;

static rgb mix(rgb a, rgb z, double t)
{
    t = t < 0 ? 0 : t > 1 ? 1 : t;
    return (rgb){ (int)lround(a.r + (z.r - a.r) * t), (int)lround(a.g + (z.g - a.g) * t),
                  (int)lround(a.b + (z.b - a.b) * t) };
}

/* One colour per position class (neartie.h), near-ties shaded by how near
 * the threshold their gap came (log scale). */
static const rgb colour_zero = { 0xdc, 0xe9, 0xd5 }, colour_tie_low = { 0xfd, 0xe6, 0x8a },
                 colour_tie_high = { 0xea, 0x58, 0x0c }, colour_noise = { 0x7c, 0x3a, 0xed },
                 colour_beyond = { 0xb9, 0x1c, 0x1c }, colour_bound = { 0x45, 0x0a, 0x0a },
                 colour_kl_low = { 0xef, 0xf6, 0xff }, colour_kl_high = { 0x1e, 0x3a, 0x8a },
                 colour_none = { 0xf3, 0xf4, 0xf6 };

static rgb gap_colour(const vt_nt_position *x, double threshold)
{
    switch (x->cls) {
    case VT_POS_ZERO: return colour_zero;
    case VT_POS_NEAR_TIE:
        return mix(colour_tie_low, colour_tie_high, threshold > 0 ? log1p(x->gap_mnats) / log1p(threshold) : 1);
    case VT_POS_WITHIN_NOISE: return colour_noise;
    default: return x->bound ? colour_bound : colour_beyond;
    }
}

/* KL in nats on a log scale: 1e-6 and below palest, 1 and above darkest. */
static rgb kl_colour(double kl)
{
    if (isnan(kl))
        return colour_none;
    return mix(colour_kl_low, colour_kl_high, kl > 0 ? (log10(kl) + 6.0) / 6.0 : 0);
}

static void fill(vt_sbuf *b, rgb c) { vt_sbuf_printf(b, "#%02x%02x%02x", c.r, c.g, c.b); }

static const char *const class_label[] = { "zero gap", "near tie", "within the oracle's noise",
                                           "beyond the oracle's noise" };

/* ------------------------------------------------------------ sections */

static void totals_section(vt_sbuf *b, const cJSON *tot, double threshold)
{
    static const struct {
        const char *key, *label;
    } cols[] = { { "prompts", "prompts" },
                 { "strict", "strict" },
                 { "near_tie_only", "near-tie-only" },
                 { "within_noise", "within-noise" },
                 { "failed", "failed" },
                 { "positions", "positions" },
                 { "zero_gaps", "zero gaps" },
                 { "within_gaps", "gaps within" },
                 { "above_gaps", "gaps above" },
                 { "within_noise_gaps", "within the noise" },
                 { "beyond_noise_gaps", "beyond the noise" },
                 { "max_gap_mnats", "max gap (mn)" },
                 { "scorer_disagreements", "scorer disagreements" } };
    vt_sbuf_printf(b, "<h2>Summary</h2>\n<p>Threshold %g milli-nats. Gaps: gap = 1000 × (log p(oracle argmax) − "
                   "log p(local token)), the oracle teacher-forced on the local stream.</p>\n"
                   "<table id=\"totals\" class=\"grid\"><tr>", threshold);
    for (size_t i = 0; i < sizeof cols / sizeof cols[0]; i++)
        vt_sbuf_printf(b, "<th>%s</th>", cols[i].label);
    vt_sbuf_puts(b, "</tr>\n<tr>");
    for (size_t i = 0; i < sizeof cols / sizeof cols[0]; i++) {
        /* The exact value beside the one shown, for a reader (and the test) to compare. */
        const cJSON *v = get(tot, cols[i].key);
        char exact[64] = "null";
        if (cJSON_IsNumber(v))
            vt_canonical_number(v->valuedouble, exact); /* as the report's text has it */
        vt_sbuf_printf(b, "<td data-total=\"%s\" data-value=\"%s\">", cols[i].key, exact);
        if (cJSON_IsNumber(v) && v->valuedouble != floor(v->valuedouble))
            vt_sbuf_printf(b, "%.3f", v->valuedouble);
        else
            scalar(b, v);
        vt_sbuf_puts(b, "</td>");
    }
    vt_sbuf_puts(b, "</tr></table>\n");
}

static void prompts_section(vt_sbuf *b, vt_neartie *c)
{
    const vt_doc *L = &c->doc[LOCAL];
    vt_sbuf_puts(b, "<table id=\"prompts\" class=\"grid\"><tr><th>#</th><th>prompt</th><th>class</th><th>positions</th>"
                    "<th>first divergence</th><th>local token</th><th>oracle token</th><th>gap (mn)</th>"
                    "<th>max gap (mn)</th><th>above</th><th>within noise</th></tr>\n");
    for (int32_t p = 0; p < L->n_prompts; p++) {
        const vt_nt_prompt_result *x = &c->res[p];
        const char *cls = vt_prompt_class_name(x->cls);
        vt_sbuf_printf(b, "<tr class=\"%s\"><td>%d</td><td><a href=\"#strip-%d\">", cls, p, p);
        esc_bytes(b, c->ids[p]);
        vt_sbuf_printf(b, "</a></td><td>%s</td><td>%d</td>", cls, c->positions[p]);
        if (x->first_divergence >= 0) {
            vt_sbuf_printf(b, "<td>%d</td><td>", x->first_divergence);
            tok(b, c, x->local_token);
            vt_sbuf_puts(b, "</td><td>");
            tok(b, c, x->oracle_token);
            vt_sbuf_printf(b, "</td><td>%.3f</td>", x->first_gap_mnats);
        } else {
            vt_sbuf_puts(b, "<td>-</td><td>-</td><td>-</td><td>-</td>");
        }
        vt_sbuf_printf(b, "<td>%.3f</td><td>%d</td><td>%d</td></tr>\n", x->max_gap_mnats, x->above_gaps,
                       x->within_noise_gaps);
    }
    vt_sbuf_puts(b, "</table>\n");
}

/* One cell's tooltip: the position, both tokens, the gap in every shape, KL. */
static void cell_title(vt_sbuf *b, vt_neartie *c, int32_t p, int32_t i, const vt_nt_prompt_input *in,
                       const vt_nt_position *x, double kl)
{
    const vt_doc *S = &c->doc[SCORES];
    vt_sbuf_printf(b, "<title>position %d: local ", i);
    tok(b, c, in->local_tokens[i]);
    vt_sbuf_puts(b, "; oracle capture ");
    tok(b, c, in->oracle_tokens[i]);
    vt_sbuf_puts(b, "; scorer&#39;s argmax ");
    tok(b, c, S->argmax[S->off[p] + i]);
    vt_sbuf_printf(b, "; gap %.3f mn%s (%s", x->gap_mnats, x->bound ? " or more (not in the oracle's top k)" : "",
                   vt_nt_kind_names[vt_nt_scoring_kind(S)]);
    for (int k = SCORES_B; k <= SCORES_C; k++)
        if (c->have[k])
            vt_sbuf_printf(b, "; %s %.3f", vt_nt_kind_names[vt_nt_scoring_kind(&c->doc[k])],
                           x->gap_other_mnats[k - SCORES_B]);
    vt_sbuf_printf(b, "): %s", class_label[x->cls]);
    if (!isnan(kl))
        vt_sbuf_printf(b, "; KL %.6g nats", kl);
    vt_sbuf_puts(b, "</title>");
}

enum { STRIP_WIDTH = 960, GAP_ROW = 14, KL_ROW = 7, MARK = 7 };

static void strips_section(vt_sbuf *b, vt_neartie *c, int with_kl)
{
    const vt_doc *L = &c->doc[LOCAL];
    const double thr = c->o.threshold_mnats;
    vt_sbuf_printf(b, "<h2>Gaps per position</h2>\n<p class=\"legend\">"
                      "<span class=\"sw\" style=\"background:#%02x%02x%02x\"></span> zero gap "
                      "<span class=\"sw\" style=\"background:linear-gradient(90deg,#%02x%02x%02x,#%02x%02x%02x)\">"
                      "</span> near tie (0 &lt; gap ≤ %g mn, darker nearer the threshold) "
                      "<span class=\"sw\" style=\"background:#%02x%02x%02x\"></span> above in some shape, within in "
                      "another: within the oracle&#39;s noise "
                      "<span class=\"sw\" style=\"background:#%02x%02x%02x\"></span> above in every shape scored "
                      "<span class=\"sw\" style=\"background:#%02x%02x%02x\"></span> a lower bound (the local token "
                      "outside the oracle&#39;s top k); ▼ the first divergence of the token streams; a dot under a "
                      "cell: the scorer&#39;s argmax is not the local token.%s Hover over a cell for its tokens and "
                      "numbers.</p>\n<div class=\"strips\">\n",
                   colour_zero.r, colour_zero.g, colour_zero.b, colour_tie_low.r, colour_tie_low.g, colour_tie_low.b,
                   colour_tie_high.r, colour_tie_high.g, colour_tie_high.b, thr, colour_noise.r, colour_noise.g,
                   colour_noise.b, colour_beyond.r, colour_beyond.g, colour_beyond.b, colour_bound.r,
                   colour_bound.g, colour_bound.b,
                   with_kl ? " The thin row under each strip: KL(oracle || local) at the positions with identical "
                             "prefixes, paler to darker from 1e-6 to 1 nat (grey: not compared)."
                           : "");
    for (int32_t p = 0; p < L->n_prompts; p++) {
        vt_nt_prompt_input in;
        vt_nt_prompt_input_of(c, p, &in);
        const vt_nt_prompt_result *r = &c->res[p];
        const int32_t n = in.n;
        /* Cells as wide as fit one row, 3 to 16 pixels; wrapped beyond. */
        int cw = n > 0 ? STRIP_WIDTH / n : 16;
        cw = cw < 3 ? 3 : cw > 16 ? 16 : cw;
        int per_row = STRIP_WIDTH / cw, rows = n > 0 ? (n + per_row - 1) / per_row : 1;
        int row_h = MARK + GAP_ROW + 4 + (with_kl ? KL_ROW + 1 : 0);
        int width = (n < per_row ? (n > 0 ? n : 1) : per_row) * cw;
        vt_sbuf_printf(b, "<figure class=\"strip %s\" id=\"strip-%d\" data-prompt=\"%d\" data-positions=\"%d\">"
                          "<figcaption><b>", vt_prompt_class_name(r->cls), p, p, n);
        esc_bytes(b, c->ids[p]);
        vt_sbuf_printf(b, "</b> %s, %d positions, max gap %.3f mn", vt_prompt_class_name(r->cls), n,
                       r->max_gap_mnats);
        if (r->first_divergence >= 0)
            vt_sbuf_printf(b, ", first divergence at %d", r->first_divergence);
        vt_sbuf_printf(b, "</figcaption>\n<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
                          "role=\"img\">\n", width, rows * row_h);
        for (int32_t i = 0; i < n; i++) {
            vt_nt_position x;
            vt_nt_score_position(&in, i, thr, &x);
            int px = (i % per_row) * cw, py = (i / per_row) * row_h + MARK;
            double kl = c->kl_at ? c->kl_at[L->off[p] + i] : NAN;
            vt_sbuf_printf(b, "<g class=\"pos %s\"><rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"",
                           x.cls == VT_POS_ZERO ? "zero" : x.cls == VT_POS_NEAR_TIE ? "tie"
                           : x.cls == VT_POS_WITHIN_NOISE ? "noise" : "beyond",
                           px, py, cw > 4 ? cw - 1 : cw, GAP_ROW);
            fill(b, gap_colour(&x, thr));
            vt_sbuf_puts(b, "\"/>");
            if (x.gap_mnats > 0 || x.bound)
                vt_sbuf_printf(b, "<circle cx=\"%.1f\" cy=\"%d\" r=\"1.5\" fill=\"#111\"/>", px + (cw - 1) / 2.0,
                               py + GAP_ROW + 2);
            if (with_kl) {
                vt_sbuf_printf(b, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"", px,
                               py + GAP_ROW + 4, cw > 4 ? cw - 1 : cw, KL_ROW);
                fill(b, kl_colour(kl));
                vt_sbuf_puts(b, "\"/>");
            }
            cell_title(b, c, p, i, &in, &x, kl);
            vt_sbuf_puts(b, "</g>\n");
        }
        if (r->first_divergence >= 0) {
            int i = r->first_divergence, px = (i % per_row) * cw, py = (i / per_row) * row_h;
            double mid = px + (cw - 1) / 2.0;
            vt_sbuf_printf(b, "<path class=\"divergence\" d=\"M%.1f %d L%.1f %d L%.1f %d Z\" fill=\"#111\">"
                              "<title>first divergence: position %d</title></path>\n",
                           mid - 3.5, py, mid + 3.5, py, mid, py + MARK - 1, i);
        }
        vt_sbuf_puts(b, "</svg></figure>\n");
    }
    vt_sbuf_puts(b, "</div>\n");
}

/* Gaps of the first shape over every compared position, in bins of
 * milli-nats; bar heights on a log scale (zero gaps usually dominate). */
static void histogram_section(vt_sbuf *b, vt_neartie *c)
{
    static const double edge[] = { 0, 1, 10, 50, 100, 250, 500, 1000, 5000, INFINITY };
    static const char *const label[] = { "0", "≤1", "≤10", "≤50", "≤100", "≤250", "≤500", "≤1000", "≤5000", "&gt;5000" };
    enum { NB = 10 };
    int64_t count[NB] = { 0 };
    const vt_doc *L = &c->doc[LOCAL];
    for (int32_t p = 0; p < L->n_prompts; p++) {
        vt_nt_prompt_input in;
        vt_nt_prompt_input_of(c, p, &in);
        for (int32_t i = 0; i < in.n; i++) {
            double g = vt_nt_gap_mnats(in.logp_argmax[i], in.logp_local[i]);
            int k = 0;
            if (g > 0)
                for (k = 1; k < NB - 1 && g > edge[k]; k++)
                    ;
            count[k]++;
        }
    }
    int64_t max = 1;
    for (int k = 0; k < NB; k++)
        max = count[k] > max ? count[k] : max;
    const int bw = 72, H = 140, top = 18, W = NB * bw;
    vt_sbuf_printf(b, "<h2>Histogram of gaps</h2>\n<p>Every compared position&#39;s gap in the first shape scored "
                      "(%s), in milli-nats; bar heights on a log scale, counts above the bars; red: above the "
                      "threshold of %g.</p>\n<svg id=\"histogram\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" "
                      "height=\"%d\" role=\"img\">\n",
                   vt_nt_kind_names[vt_nt_scoring_kind(&c->doc[SCORES])], c->o.threshold_mnats, W, H + top + 20);
    for (int k = 0; k < NB; k++) {
        double h = count[k] ? (H - 4) * log1p((double)count[k]) / log1p((double)max) + 4 : 0;
        int above = k > 0 && edge[k - 1] >= c->o.threshold_mnats;
        vt_sbuf_printf(b, "<g class=\"bin\" data-count=\"%lld\"><rect x=\"%d\" y=\"%.1f\" width=\"%d\" "
                          "height=\"%.1f\" fill=\"%s\"/><text x=\"%d\" y=\"%.1f\" text-anchor=\"middle\">%lld</text>"
                          "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">%s</text></g>\n",
                       (long long)count[k], k * bw + 6, top + H - h, bw - 12, h,
                       k == 0 ? "#8fb98a" : above ? "#b91c1c" : "#f59e0b", k * bw + bw / 2, top + H - h - 4,
                       (long long)count[k], k * bw + bw / 2, top + H + 16, label[k]);
    }
    vt_sbuf_puts(b, "</svg>\n");
}

/* KL(oracle || local) at each compared position: a dot per (prompt,
 * position), log scale. */
static void kl_section(vt_sbuf *b, vt_neartie *c)
{
    const vt_nt_metrics *m = &c->metrics;
    vt_sbuf_puts(b, "<h2>KL divergence per position</h2>\n");
    if (!m->available) {
        vt_sbuf_puts(b, "<p id=\"kl\">Not available: ");
        esc_bytes(b, m->reason);
        vt_sbuf_puts(b, "</p>\n");
        return;
    }
    const vt_doc *L = &c->doc[LOCAL];
    int32_t max_n = 1;
    double lo = -8, hi = 0;
    for (int32_t p = 0; p < L->n_prompts; p++) {
        max_n = c->positions[p] > max_n ? c->positions[p] : max_n;
        for (int32_t i = 0; i < c->positions[p]; i++) {
            double kl = c->kl_at[L->off[p] + i];
            if (kl > 0 && log10(kl) > hi)
                hi = ceil(log10(kl));
        }
    }
    const int W = STRIP_WIDTH, H = 200, left = 48, top = 10;
    vt_sbuf_printf(b, "<p>KL(oracle || local) in nats at the %lld positions with identical prefixes (mean %.6g, max "
                      "%.6g), one dot per prompt and position, on a log scale (values at or below 1e%d drawn on the "
                      "bottom line).</p>\n<svg id=\"kl\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
                      "role=\"img\">\n",
                   (long long)m->positions, m->kld_mean, m->kld_max, (int)lo, W + left + 10, H + top + 30);
    for (int d = (int)lo; d <= (int)hi; d++) {
        double y = top + H - (d - lo) / (hi - lo) * H;
        vt_sbuf_printf(b, "<line x1=\"%d\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/><text x=\"%d\" y=\"%.1f\" "
                          "text-anchor=\"end\">1e%d</text>\n", left, left + W, y, y, left - 4, y + 4, d);
    }
    vt_sbuf_printf(b, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">position (0 to %d)</text>\n", left + W / 2,
                   top + H + 24, max_n - 1);
    for (int32_t p = 0; p < L->n_prompts; p++)
        for (int32_t i = 0; i < c->positions[p]; i++) {
            double kl = c->kl_at[L->off[p] + i];
            if (isnan(kl))
                continue;
            double v = kl > 0 ? log10(kl) : lo;
            v = v < lo ? lo : v;
            double x = left + (max_n > 1 ? (double)i / (max_n - 1) : 0.5) * W, y = top + H - (v - lo) / (hi - lo) * H;
            vt_sbuf_printf(b, "<circle class=\"kl\" cx=\"%.1f\" cy=\"%.1f\" r=\"2.2\" fill=\"#1e3a8a\" "
                              "fill-opacity=\"0.55\"><title>", x, y);
            esc_bytes(b, c->ids[p]);
            vt_sbuf_printf(b, " position %d: KL %.6g nats</title></circle>\n", i, kl);
        }
    vt_sbuf_puts(b, "</svg>\n");
}

static void largest_gaps_section(vt_sbuf *b, vt_neartie *c)
{
    if (!c->n_top)
        return;
    const vt_doc *L = &c->doc[LOCAL], *S = &c->doc[SCORES];
    vt_sbuf_puts(b, "<h2>Largest gaps</h2>\n<table id=\"largest\" class=\"grid\"><tr><th>prompt</th><th>position</th>"
                    "<th>gap (mn)</th><th>local token</th><th>oracle prefers</th><th>preceded by</th></tr>\n");
    for (int32_t k = 0; k < c->n_top; k++) {
        const gap_entry *g = &c->top[k];
        const int32_t *lt = L->tokens + L->off[g->prompt];
        vt_sbuf_puts(b, "<tr><td>");
        esc_bytes(b, c->ids[g->prompt]);
        vt_sbuf_printf(b, "</td><td>%d</td><td>%.3f</td><td>", g->position, g->gap);
        tok(b, c, lt[g->position]);
        vt_sbuf_puts(b, "</td><td>");
        tok(b, c, S->argmax[S->off[g->prompt] + g->position]);
        vt_sbuf_puts(b, "</td><td>");
        for (int32_t i = g->position - c->o.context < 0 ? 0 : g->position - c->o.context; i < g->position; i++) {
            tok(b, c, lt[i]);
            vt_sbuf_puts(b, " ");
        }
        vt_sbuf_puts(b, "</td></tr>\n");
    }
    vt_sbuf_puts(b, "</table>\n");
}

static void metrics_section(vt_sbuf *b, const cJSON *metrics)
{
    vt_sbuf_puts(b, "<h2>Distribution metrics</h2>\n<table id=\"metrics\" class=\"kv\">\n");
    int budget = 40;
    json_rows(b, "", metrics, &budget);
    vt_sbuf_puts(b, "</table>\n");
}

/* A capture's identity, settings and seals: the members a reader checks. */
static void capture_rows(vt_sbuf *b, const cJSON *ref, const vt_doc *d)
{
    static const char *const members[] = { "tool", "model", "runtime", "package", "launcher", "settings",
                                           "determinism", "logits_file", "topk_file" };
    int budget = 80;
    json_rows(b, "report", ref, &budget); /* file, sha256, seal, workload seal, runner */
    for (size_t i = 0; i < sizeof members / sizeof members[0]; i++) {
        const cJSON *v = get(d->meta, members[i]);
        if (strcmp(members[i], "runtime") == 0) { /* not the list of every loaded object */
            for (const cJSON *k = v ? v->child : NULL; k; k = k->next)
                if (strcmp(k->string, "objects") != 0) {
                    char path[300];
                    snprintf(path, sizeof path, "runtime.%s", k->string);
                    json_rows(b, path, k, &budget);
                }
            continue;
        }
        if (strcmp(members[i], "settings") == 0) {
            json_rows(b, "settings.resolved", get(v, "resolved"), &budget);
            json_rows(b, "settings.differences", get(v, "differences"), &budget);
            continue;
        }
        if (strcmp(members[i], "model") == 0) {
            for (const cJSON *k = v ? v->child : NULL; k; k = k->next)
                if (strcmp(k->string, "gguf") != 0) {
                    char path[300];
                    snprintf(path, sizeof path, "model.%s", k->string);
                    json_rows(b, path, k, &budget);
                }
            continue;
        }
        json_rows(b, members[i], v, &budget);
    }
}

static void identities_section(vt_sbuf *b, vt_neartie *c, const cJSON *r)
{
    vt_sbuf_puts(b, "<h2>Captures</h2>\n<div class=\"cols\">\n");
    static const char *const side[2] = { "local", "oracle" };
    for (int s = 0; s < 2; s++) {
        vt_sbuf_printf(b, "<section id=\"%s\"><h3>%s: ", side[s], side[s]);
        esc_bytes(b, c->doc[s].path);
        vt_sbuf_puts(b, "</h3>\n<table class=\"kv\">\n");
        capture_rows(b, get(r, side[s]), &c->doc[s]);
        vt_sbuf_puts(b, "</table></section>\n");
    }
    vt_sbuf_puts(b, "</div>\n<h3>Prefix scores, the oracle&#39;s noise, evidence, the gate</h3>\n<table class=\"kv\">\n");
    int budget = 80;
    json_rows(b, "prefix_scores", get(r, "prefix_scores"), &budget);
    const cJSON *noise = get(r, "noise");
    for (const cJSON *k = noise ? noise->child : NULL; k; k = k->next)
        if (strcmp(k->string, "rule") != 0) {
            char path[300];
            snprintf(path, sizeof path, "noise.%s", k->string);
            json_rows(b, path, k, &budget);
        }
    json_rows(b, "token_text", get(r, "token_text"), &budget);
    json_rows(b, "allowed_differences", get(r, "allowed_differences"), &budget);
    json_rows(b, "evidence", get(r, "evidence"), &budget);
    json_rows(b, "gate", get(r, "gate"), &budget);
    json_rows(b, "report.schema", get(r, "schema"), &budget);
    json_rows(b, "report.tool", get(r, "tool"), &budget);
    json_rows(b, "report.seal", get(r, "seal"), &budget);
    vt_sbuf_puts(b, "</table>\n<p class=\"rule\">The noise rule: ");
    esc_bytes(b, cJSON_IsString(get(noise, "rule")) ? get(noise, "rule")->valuestring : "");
    vt_sbuf_puts(b, "</p>\n");
}

static const char style[] =
    "body{font:14px/1.4 system-ui,-apple-system,'Segoe UI',sans-serif;margin:24px;color:#111;background:#fff}"
    "h1{font-size:22px;margin:0 0 6px}h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid #ddd}"
    "h3{font-size:15px;margin:14px 0 6px;word-break:break-all}"
    ".verdict{display:inline-block;padding:2px 10px;border-radius:4px;color:#fff;font-weight:600}"
    ".pass{background:#15803d}.fail{background:#b91c1c}"
    "table{border-collapse:collapse}table.grid td,table.grid th{border:1px solid #ddd;padding:3px 7px;"
    "text-align:right}table.grid th{background:#f6f6f6}table.grid td:nth-child(2){text-align:left}"
    "table.kv th{text-align:left;font-weight:500;color:#444;padding:1px 12px 1px 0;vertical-align:top;"
    "white-space:nowrap}table.kv td{font-family:ui-monospace,monospace;font-size:12px;word-break:break-all}"
    "tr.failed td{background:#fee2e2}tr.within-noise td{background:#ede9fe}tr.near-tie-only td{background:#fef9c3}"
    "figure.strip{margin:6px 0 10px}figure.strip figcaption{font-size:13px;margin-bottom:2px}"
    "figure.strip.failed figcaption b{color:#b91c1c}"
    ".legend .sw{display:inline-block;width:22px;height:11px;margin:0 3px 0 10px;vertical-align:middle;"
    "border:1px solid #ccc}"
    "svg text{font:11px system-ui,sans-serif;fill:#333}.cols{display:flex;gap:24px;flex-wrap:wrap}"
    ".cols section{flex:1 1 420px;min-width:0}.rule{color:#555;font-size:12px;max-width:960px}"
    "footer{margin-top:30px;color:#666;font-size:12px}";

int vt_nt_build_html(vt_neartie *c, vt_error *err)
{
    const cJSON *r = c->report_tree;
    if (!r)
        return vt_error_set(err, VT_EINPUT, "html: no report to show");
    const cJSON *tot = get(r, "totals"), *gate = get(r, "gate");
    const int passed = cJSON_IsTrue(get(gate, "passed"));
    vt_sbuf b = { 0 };
    vt_sbuf_puts(&b, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
                     "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
                     "style-src 'unsafe-inline'\">\n<title>vt-neartie: ");
    esc_bytes(&b, c->o.local);
    vt_sbuf_puts(&b, " against ");
    esc_bytes(&b, c->o.oracle);
    vt_sbuf_printf(&b, "</title>\n<style>%s</style></head>\n<body>\n<h1>vt-neartie <span id=\"verdict\" "
                       "class=\"verdict %s\">gate %s</span></h1>\n<p>local <b>", style, passed ? "pass" : "fail",
                   passed ? "passed" : "FAILED");
    esc_bytes(&b, c->o.local);
    vt_sbuf_puts(&b, "</b> against oracle <b>");
    esc_bytes(&b, c->o.oracle);
    vt_sbuf_printf(&b, "</b>: %d prompts, %d strict, %d near-tie-only, %d within-noise, %d failed. ",
                   c->totals.prompts, c->totals.strict, c->totals.near_tie, c->totals.within_noise, c->totals.failed);
    for (const cJSON *e = get(gate, "reasons") ? get(gate, "reasons")->child : NULL; e; e = e->next) {
        esc_bytes(&b, e->valuestring);
        vt_sbuf_puts(&b, ". ");
    }
    if (!cJSON_IsTrue(get(get(r, "evidence"), "strict")))
        vt_sbuf_puts(&b, "<b>Evidence not strict</b> (let in by --allow-unverified: see below). ");
    vt_sbuf_puts(&b, "</p>\n");
    totals_section(&b, tot, c->o.threshold_mnats);
    prompts_section(&b, c);
    strips_section(&b, c, c->metrics.available);
    histogram_section(&b, c);
    kl_section(&b, c);
    largest_gaps_section(&b, c);
    metrics_section(&b, get(r, "metrics"));
    identities_section(&b, c, r);
    vt_sbuf_puts(&b, "<footer>Written by vt-neartie ");
    scalar(&b, get(get(r, "tool"), "version"));
    vt_sbuf_puts(&b, " (git ");
    scalar(&b, get(get(r, "tool"), "git"));
    vt_sbuf_puts(&b, ") from the report whose seal is <code id=\"report-seal\">");
    scalar(&b, get(r, "seal"));
    vt_sbuf_puts(&b, "</code>; the JSON report is the record, this page a view of it.</footer>\n</body></html>\n");
    if (b.oom || !b.p) {
        free(b.p);
        return vt_error_set(err, VT_EINPUT, "html: out of memory");
    }
    c->html_len = b.n;
    c->html = b.p;
    return VT_OK;
}
