/* Deterministic pseudo-random numbers: the seed alone determines every draw,
 * on every machine (splitmix64 seeding a xoshiro256** state). */
#ifndef VT_RNG_H
#define VT_RNG_H

#include <math.h>
#include <stdint.h>

typedef struct vt_rng { uint64_t s[4]; } vt_rng;

static inline uint64_t vt_splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static inline void vt_rng_seed(vt_rng *r, uint64_t seed)
{
    for (int i = 0; i < 4; i++)
        r->s[i] = vt_splitmix64(&seed);
}

static inline uint64_t vt_rng_next(vt_rng *r)
{
    uint64_t *s = r->s;
    uint64_t x = s[1] * 5;
    uint64_t result = ((x << 7) | (x >> 57)) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = (s[3] << 45) | (s[3] >> 19);
    return result;
}

/* Uniform in [0, 1) with 53 random bits. */
static inline double vt_rng_uniform(vt_rng *r)
{
    return (double)(vt_rng_next(r) >> 11) * 0x1.0p-53;
}

/* Standard normal (Box-Muller, one value per call; the second is dropped so
 * that the stream position depends only on the number of calls). */
static inline double vt_rng_normal(vt_rng *r)
{
    double u1 = vt_rng_uniform(r), u2 = vt_rng_uniform(r);
    if (u1 < 0x1.0p-60)
        u1 = 0x1.0p-60;
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

#endif
