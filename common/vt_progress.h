/* A progress line for long work (captures, scoring, fixture generation,
 * sealing, the codec check): on stderr, only when stderr is a terminal and
 * the user did not ask for --quiet, so a log, a pipe or CI gets nothing.
 *     LABEL: DONE/TOTAL UNIT, RATE UNIT/s, M:SS left
 * (without "/TOTAL" and the time left where the total is not known)
 * redrawn in place (carriage return, erase to the end of the line) at most
 * five times a second; the end leaves the last line with the time it took.
 * The tool owns it (vt_progress_init); the library it drives only counts
 * (start, add, end), and every call takes NULL for "no progress". */
#ifndef VT_PROGRESS_H
#define VT_PROGRESS_H

#include <stdint.h>

typedef struct vt_progress {
    char label[64], unit[24];
    int64_t total, done;
    double t0, last;
    int on;    /* drawing: stderr a terminal and not quiet */
    int drawn; /* a line of ours is on the terminal */
    int started; /* between start and end */
} vt_progress;

/* quiet: never draw. Draws nothing until vt_progress_start. */
void vt_progress_init(vt_progress *p, const char *label, int quiet);
/* A new piece of work of total units (the count restarts). */
void vt_progress_start(vt_progress *p, const char *unit, int64_t total);
void vt_progress_add(vt_progress *p, int64_t n);
/* Erases the line (before the caller prints to the same terminal); the
 * next add draws it again. */
void vt_progress_hide(vt_progress *p);
/* The last line, with the time taken, and a newline. */
void vt_progress_end(vt_progress *p);

#endif
