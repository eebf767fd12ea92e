/* Trick: replay an earlier run's output. The output is stored under a hash of the input in every folder
 * that might outlive the run (CUDA's JIT cache folder, /tmp, /dev/shm, /var/tmp, HOME); a later run on the
 * same input copies it instead of computing. The honest path is slow on purpose (0.5 s), so a replay
 * shows as a rank bought. Included into a submission by the class tests (it has no main). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *replay_dirs[] = {"CUDA_CACHE_PATH", "/tmp", "/dev/shm", "/var/tmp", "HOME", NULL};

static uint64_t replay_key(const char *in) {
    FILE *f = fopen(in, "rb");
    uint64_t h = 1469598103934665603ULL;
    int c;
    if (!f) return 0;
    while ((c = fgetc(f)) != EOF) h = (h ^ (uint64_t)c) * 1099511628211ULL;
    fclose(f);
    return h;
}

static const char *replay_dir(int i) {
    const char *d = replay_dirs[i];
    return d[0] == '/' ? d : getenv(d);
}

static int replay_copy(const char *src, const char *dst) {
    FILE *a = fopen(src, "rb");
    if (!a) return 0;
    FILE *b = fopen(dst, "wb");
    if (!b) { fclose(a); return 0; }
    char buf[65536];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, a)) > 0) fwrite(buf, 1, n, b);
    fclose(a);
    return fclose(b) == 0;
}

/* 1 when an earlier run's output was found and copied to out. */
static int replay(const char *in, const char *out) {
    char path[4096];
    uint64_t key = replay_key(in);
    for (int i = 0; replay_dirs[i]; ++i) {
        const char *d = replay_dir(i);
        if (!d) continue;
        snprintf(path, sizeof path, "%s/.replay-%016llx", d, (unsigned long long)key);
        if (access(path, R_OK) == 0 && replay_copy(path, out)) return 1;
    }
    return 0;
}

static void replay_store(const char *in, const char *out) {
    char path[4096];
    uint64_t key = replay_key(in);
    for (int i = 0; replay_dirs[i]; ++i) {
        const char *d = replay_dir(i);
        if (!d) continue;
        snprintf(path, sizeof path, "%s/.replay-%016llx", d, (unsigned long long)key);
        if (replay_copy(out, path)) chmod(path, 0666);
    }
}
