/* The progress line (vt_progress.h). */
#include "vt_progress.h"

#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void clock_text(double s, char *buf, size_t cap)
{
    const long t = s > 0 && s < 1e9 ? (long)(s + 0.5) : 0;
    if (t >= 3600)
        snprintf(buf, cap, "%ld:%02ld:%02ld", t / 3600, t / 60 % 60, t % 60);
    else
        snprintf(buf, cap, "%ld:%02ld", t / 60, t % 60);
}

void vt_progress_init(vt_progress *p, const char *label, int quiet)
{
    if (!p)
        return;
    memset(p, 0, sizeof *p);
    snprintf(p->label, sizeof p->label, "%s", label ? label : "vt");
    p->on = !quiet && isatty(STDERR_FILENO);
}

/* A rate with as many digits as a person reads: 0.42, 3.6, 71, 1953. */
static void rate_text(double r, char *buf, size_t cap)
{
    snprintf(buf, cap, r < 10 ? "%.2f" : r < 100 ? "%.1f" : "%.0f", r);
}

static void draw(vt_progress *p, int final)
{
    const double t = now_s(), el = t - p->t0;
    const double rate = el > 0 ? (double)p->done / el : 0.0;
    char left[32] = "";
    if (final)
        clock_text(el, left, sizeof left);
    else if (rate > 0 && p->total >= p->done)
        clock_text((double)(p->total - p->done) / rate, left, sizeof left);
    char of[32] = "", rt[32]; /* "/TOTAL", where the total is known */
    rate_text(rate, rt, sizeof rt);
    if (p->total > 0)
        snprintf(of, sizeof of, "/%lld", (long long)p->total);
    if (final)
        fprintf(stderr, "\r%s: %lld%s %s, %s %s/s, took %s\033[K\n", p->label, (long long)p->done, of, p->unit, rt,
                p->unit, left);
    else if (p->total > 0)
        fprintf(stderr, "\r%s: %lld%s %s, %s %s/s, %s left\033[K", p->label, (long long)p->done, of, p->unit, rt,
                p->unit, left[0] ? left : "?");
    else
        fprintf(stderr, "\r%s: %lld %s, %s %s/s\033[K", p->label, (long long)p->done, p->unit, rt, p->unit);
    fflush(stderr);
    p->last = t;
    p->drawn = !final;
}

void vt_progress_start(vt_progress *p, const char *unit, int64_t total)
{
    if (!p)
        return;
    snprintf(p->unit, sizeof p->unit, "%s", unit ? unit : "");
    p->total = total;
    p->done = 0;
    p->t0 = now_s();
    p->started = 1;
    if (p->on)
        draw(p, 0);
}

void vt_progress_add(vt_progress *p, int64_t n)
{
    if (!p)
        return;
    p->done += n;
    if (p->on && (!p->drawn || now_s() - p->last >= 0.2))
        draw(p, 0);
}

void vt_progress_hide(vt_progress *p)
{
    if (!p || !p->on || !p->drawn)
        return;
    fputs("\r\033[K", stderr);
    fflush(stderr);
    p->drawn = 0;
}

void vt_progress_end(vt_progress *p)
{
    if (!p || !p->on || !p->started)
        return;
    draw(p, 1);
    p->started = 0;
}
