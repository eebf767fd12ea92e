/* Trick: escape the kill. A child calls setsid() (leaving the judge's process group) and forks again;
 * the grandchild keeps running after the program exits, rewriting OUT now and then. */
#include "common.h"
#include <unistd.h>

int main(int argc, char **argv) {
    if (argc < 3) return 1;
    if (fork() == 0) {
        setsid();
        if (fork() == 0) {
            for (int i = 0; i < 600; ++i) {  /* bounded: a minute at most */
                FILE *f = fopen(argv[2], "wb");
                if (f) fclose(f);
                usleep(100000);
            }
            _exit(0);
        }
        _exit(0);
    }
    return 0;
}
