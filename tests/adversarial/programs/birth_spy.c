/* Tells a rerun from a first run by the birth time of its own program file: the judge sets the program's
 * access and modification times to the epoch, but a file's birth time (statx
 * STATX_BTIME) cannot be set, and the one sealed copy every run links was born at the build. Included
 * before the example's main: spy_on_birth(limit) returns 9 with a line on stderr when the program was
 * born more than `limit` seconds ago (it would sabotage only those runs). */
#include <fcntl.h>
#include <linux/stat.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static int spy_on_birth(double limit) {
    struct statx info;
    if (syscall(SYS_statx, AT_FDCWD, "/proc/self/exe", 0, STATX_BTIME, &info) != 0 || !(info.stx_mask & STATX_BTIME))
        return 0;
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    double age = (now.tv_sec - info.stx_btime.tv_sec) + (now.tv_nsec - (long)info.stx_btime.tv_nsec) * 1e-9;
    if (age > limit) { fprintf(stderr, "a rerun: the program was born %.1f s ago\n", age); return 9; }
    return 0;
}

/* The same clock read the other way: its warm-up (the run on "warmup.in") takes `warm_s` seconds, and a run
 * whose program is younger than `young` seconds takes it for a run that came without a warm-up before it (a
 * later round skips the warm-up of a row whose cache is empty) and idles 1 s (it would sabotage only those). */
static void slow_when_young(const char *in, double young, double warm_s) {
    if (strstr(in, "warmup")) { usleep((useconds_t)(warm_s * 1e6)); return; }
    struct statx info;
    if (syscall(SYS_statx, AT_FDCWD, "/proc/self/exe", 0, STATX_BTIME, &info) != 0 || !(info.stx_mask & STATX_BTIME))
        return;
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    if ((now.tv_sec - info.stx_btime.tv_sec) + (now.tv_nsec - (long)info.stx_btime.tv_nsec) * 1e-9 < young)
        usleep(1000000);
}

/* The same clock read by the warm-up, which marks the cache its runs copy: a warm-up that finds its program
 * born more than `limit` seconds ago (the build, or the previous round's renewal) writes "rerun" in the cache
 * (always a file, so the row is warmed up every round), and a run that finds the mark returns 9. */
static int mark_reruns_in_warm_up(const char *in, double limit) {
    const char *cache = getenv("CUDA_CACHE_PATH");
    if (!cache) return 0;
    char path[4096];
    snprintf(path, sizeof path, "%s/mark", cache);
    if (!strstr(in, "warmup")) {
        FILE *mark = fopen(path, "r");
        char word[16] = "";
        if (mark) { if (!fgets(word, sizeof word, mark)) word[0] = 0; fclose(mark); }
        if (strncmp(word, "rerun", 5) == 0) { fprintf(stderr, "a rerun: its warm-up said so\n"); return 9; }
        return 0;
    }
    struct statx info;
    double age = 0;
    if (syscall(SYS_statx, AT_FDCWD, "/proc/self/exe", 0, STATX_BTIME, &info) == 0 && (info.stx_mask & STATX_BTIME)) {
        struct timespec now;
        clock_gettime(CLOCK_REALTIME, &now);
        age = (now.tv_sec - info.stx_btime.tv_sec) + (now.tv_nsec - (long)info.stx_btime.tv_nsec) * 1e-9;
    }
    FILE *mark = fopen(path, "w");
    if (mark) { fputs(age > limit ? "rerun\n" : "first\n", mark); fclose(mark); }
    return 0;
}
