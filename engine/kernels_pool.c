/* The thread pool (kernels.h). */
#include "kernels_impl.h"

/* ======================================================================
 * Thread pool: n-1 persistent workers plus the calling thread (thread 0).
 * vt_pool_run hands one function to all n and returns when all have finished.
 * The products and attention hand their work out in pieces each thread
 * takes from a shared counter (kernels_matmul.c, kernels_kv.c), so which
 * thread computes an element changes from run to run; the element's value
 * does not depend on it: its arithmetic is the same on every thread.
 *
 * A token makes a few dispatches per layer, each only microseconds of work
 * on small models, so waiting threads first spin on the generation counter
 * for a short while and only then sleep on the condition variable (sleeping
 * at once would cost a wake-up per dispatch).
 * ====================================================================== */

/* Waits: POOL_SPINS polls with a pause, then POOL_YIELDS polls that yield
 * the core (cheap when idle cores exist, and fair when the machine is
 * oversubscribed, where pure spinning collapses), then sleep. */
#define POOL_SPINS 256
#define POOL_YIELDS 256

static int poll_wait(atomic_uint_fast64_t *gen, uint64_t seen, atomic_int *count)
{
    for (int i = 0; i < POOL_SPINS + POOL_YIELDS; i++) {
        if (gen ? atomic_load(gen) != seen : atomic_load(count) == 0)
            return 1;
        if (i < POOL_SPINS) {
#ifdef VT_X86
            _mm_pause();
#endif
        } else {
            sched_yield();
        }
    }
    return gen ? atomic_load(gen) != seen : atomic_load(count) == 0;
}

static void *worker_main(void *arg)
{
    vt_pool_worker *w = arg;
    vt_pool *p = w->p;
    uint64_t seen = 0;
    for (;;) {
        if (!poll_wait(&p->generation, seen, NULL)) {
            pthread_mutex_lock(&p->mu);
            while (atomic_load(&p->generation) == seen && !atomic_load(&p->quit))
                pthread_cond_wait(&p->start, &p->mu);
            pthread_mutex_unlock(&p->mu);
        }
        if (atomic_load(&p->quit))
            return NULL;
        seen = atomic_load(&p->generation);

        p->fn(p->ctx, w->ith, p->n); /* fn, ctx were written before the bump */

        if (atomic_fetch_sub(&p->pending, 1) == 1) {
            pthread_mutex_lock(&p->mu);
            pthread_cond_signal(&p->done);
            pthread_mutex_unlock(&p->mu);
        }
    }
}

void vt_pool_run(vt_pool *p, vt_task_fn fn, void *ctx)
{
    if (p->n <= 1) {
        fn(ctx, 0, 1);
        return;
    }
    p->fn = fn;
    p->ctx = ctx;
    atomic_store(&p->pending, p->n - 1);
    pthread_mutex_lock(&p->mu);
    atomic_fetch_add(&p->generation, 1);
    pthread_cond_broadcast(&p->start);
    pthread_mutex_unlock(&p->mu);

    fn(ctx, 0, p->n);

    if (!poll_wait(NULL, 0, &p->pending)) {
        pthread_mutex_lock(&p->mu);
        while (atomic_load(&p->pending) > 0)
            pthread_cond_wait(&p->done, &p->mu);
        pthread_mutex_unlock(&p->mu);
    }
}

void vt_pool_stop(vt_pool *p, int started)
{
    pthread_mutex_lock(&p->mu);
    atomic_store(&p->quit, 1);
    atomic_fetch_add(&p->generation, 1);
    pthread_cond_broadcast(&p->start);
    pthread_mutex_unlock(&p->mu);
    for (int i = 0; i < started; i++)
        pthread_join(p->threads[i], NULL);
}

int vt_pool_start(vt_pool *p, int n, vt_error *err)
{
    p->n = n;
    atomic_init(&p->generation, 0);
    atomic_init(&p->pending, 0);
    atomic_init(&p->quit, 0);
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->start, NULL);
    pthread_cond_init(&p->done, NULL);
    p->initialized = 1;
    if (p->n <= 1)
        return VT_OK;
    p->threads = calloc((size_t)p->n, sizeof *p->threads);
    p->args = calloc((size_t)p->n, sizeof *p->args);
    if (!p->threads || !p->args)
        return vt_error_set(err, VT_EINPUT, "out of memory for %d threads", p->n);
    for (int i = 1; i < p->n; i++) {
        p->args[i - 1] = (vt_pool_worker){ p, i };
        if (pthread_create(&p->threads[i - 1], NULL, worker_main, &p->args[i - 1]) != 0)
            return vt_error_set(err, VT_EINPUT, "could not start worker thread %d of %d", i, p->n);
        p->started++;
    }
    return VT_OK;
}
