/* Trick: change the output after it is judged. The program writes an output of the right size (all
 * zeros) and exits; a child it left behind waits, then rewrites OUT with the reference's bytes if it
 * can find them (else with other zeros of a different size). The judge must check what was there when
 * the program exited, and the child must be dead by then. */
#include "common.h"
#include <unistd.h>

int main(int argc, char **argv) {
    if (argc < 3) return 1;
    size_t count = output_floats(argv[1]);
    FILE *f = fopen(argv[2], "wb");
    if (!f || count == 0) return 3;
    float zero = 0.0f;
    for (size_t i = 0; i < count; ++i) fwrite(&zero, sizeof zero, 1, f);
    fclose(f);
    if (fork() == 0) {
        setsid();
        usleep(300000);
        FILE *g = fopen(argv[2], "wb");
        if (g) { fwrite(&zero, sizeof zero, 1, g); fclose(g); }
        _exit(0);
    }
    return 0;
}
