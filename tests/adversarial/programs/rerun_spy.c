/* Tells a rerun from a first run by how long ago the warm-up ran: the warm-up writes the time into its
 * cache, every judged run reads its copy. Included before the example's main: spy_on_reruns(limit)
 * returns 9 with a line on stderr when the warm-up ran more than `limit` seconds ago (it would sabotage
 * only those runs). */
#include <stdio.h>
#include <time.h>

static int spy_on_reruns(double limit) {
    const char *cache = getenv("CUDA_CACHE_PATH");
    if (!cache) return 0;
    char path[4096];
    snprintf(path, sizeof path, "%s/stamp", cache);
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    double t = now.tv_sec + now.tv_nsec * 1e-9, then = 0;
    FILE *f = fopen(path, "r");
    if (!f) {
        f = fopen(path, "w");
        if (f) { fprintf(f, "%.6f\n", t); fclose(f); }
        return 0;
    }
    if (fscanf(f, "%lf", &then) != 1) then = t;
    fclose(f);
    if (t - then > limit) { fprintf(stderr, "a rerun: the warm-up ran %.1f s ago\n", t - then); return 9; }
    return 0;
}
