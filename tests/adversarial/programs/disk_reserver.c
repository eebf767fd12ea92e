/* Reserves disk the size caps never see: fallocate(FALLOC_FL_KEEP_SIZE) grows no file's size, so
 * RLIMIT_FSIZE and a sealing that counts sizes let it through. Included before the example's main:
 * reserve(fd, mib) reserves up to `mib` MiB, 1 MiB at a time, and returns how many it got;
 * reserve_streams() tries stdout and stderr (once files on the judge's disk), and returns 6 with a line
 * on stderr when it got 8 MiB or more. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <linux/falloc.h>
#include <stdio.h>

static long reserve(int fd, long mib) {
    long got = 0;
    for (; got < mib; ++got)
        if (fallocate(fd, FALLOC_FL_KEEP_SIZE, (off_t)got << 20, 1 << 20) != 0) break;
    return got;
}

static int reserve_streams(void) {
    long got = reserve(1, 4096) + reserve(2, 4096);
    if (got >= 8) { fprintf(stderr, "reserved %ld MiB through stdout and stderr\n", got); return 6; }
    return 0;
}

/* In the warm-up (no "reserved" file in CUDA_CACHE_PATH yet): reserve under the cache and note how much;
 * in a judged run: returns 7 with a line on stderr when the warm-up got 8 MiB or more. */
static int reserve_in_cache(void) {
    const char *cache = getenv("CUDA_CACHE_PATH");
    if (!cache) return 0;
    char path[4096], note[4096];
    snprintf(path, sizeof path, "%s/reserved", cache);
    snprintf(note, sizeof note, "%s/reserved.mib", cache);
    FILE *seen = fopen(note, "r");
    if (seen) {
        long got = 0;
        if (fscanf(seen, "%ld", &got) != 1) got = 0;
        fclose(seen);
        if (got >= 8) { fprintf(stderr, "the warm-up reserved %ld MiB under its cache\n", got); return 7; }
        return 0;
    }
    int fd = open(path, O_WRONLY | O_CREAT, 0644);
    long got = fd >= 0 ? reserve(fd, 4096) : 0;
    FILE *out = fopen(note, "w");
    if (out) { fprintf(out, "%ld\n", got); fclose(out); }
    return 0;
}
