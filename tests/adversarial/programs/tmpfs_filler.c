/* Trick: fill the host's memory through the sandbox's in-memory folders: write up to FILL_MB (default 96)
 * MiB into /, /dev, /dev/shm, /tmp and its case folder, in files of 512 KiB (under any per-file limit), and say on stderr
 * how many MiB each took, then exit 1. A judge whose / and /dev are writable, unlimited tmpfs lets a run
 * take the host's memory. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef FILL_MB
#define FILL_MB 96
#endif

static int fill(const char *folder) {
    static char block[1 << 19];
    char path[256];
    int files = 0;
    memset(block, 7, sizeof block);
    for (; files < 2 * FILL_MB; ++files) {
        snprintf(path, sizeof path, "%s/filler%d", folder, files);
        FILE *f = fopen(path, "wb");
        if (!f) break;
        int ok = fwrite(block, 1, sizeof block, f) == sizeof block && fflush(f) == 0;
        if (fclose(f) != 0 || !ok) { unlink(path); break; }
    }
    for (int i = 0; i < files; ++i) {
        snprintf(path, sizeof path, "%s/filler%d", folder, i);
        unlink(path);
    }
    return files / 2;
}

int main(void) {
    int root = fill(""), dev = fill("/dev"), shm = fill("/dev/shm"), tmp = fill("/tmp"), here = fill(".");
    fprintf(stderr, "filled root=%d dev=%d shm=%d tmp=%d case=%d\n", root, dev, shm, tmp, here);
    return 1;
}
