/* Trick: fill the disk. Writes far more than the output's size (-DFILL_MB, 256 MiB by default) to OUT,
 * in 1 MiB blocks; reports how far it got when a write fails. */
#include "common.h"

#ifndef FILL_MB
#define FILL_MB 256
#endif

int main(int argc, char **argv) {
    if (argc < 3) return 1;
    static char block[1 << 20];
    memset(block, 0x7f, sizeof block);
    FILE *f = fopen(argv[2], "wb");
    if (!f) return 3;
    for (int i = 0; i < FILL_MB; ++i) {
        if (fwrite(block, 1, sizeof block, f) != sizeof block || fflush(f) != 0) {
            fprintf(stderr, "stopped after %d MiB\n", i);
            return 4;
        }
    }
    fclose(f);
    return 0;
}
