/* Trick: processes that leave the program's group (setsid) and stop every process their uid may signal, over and
 * over (kill(-1, SIGSTOP)), once the program has exited. In the fallback, where each run is a uid of its own, the
 * judge's kill pass forks a child that becomes that uid to kill all of it at once: stopped before its pass, the
 * child never ended, and a judge that waited for its exit alone waited for ever. Bounded by STOPPERS children,
 * each alive for at most 20 s. */
#include <signal.h>
#include <time.h>
#include <unistd.h>

#ifndef STOPPERS
#define STOPPERS 4
#endif

int main(void) {
    for (int i = 0; i < STOPPERS; ++i) {
        if (fork() == 0) {
            setsid();
            time_t start = time(NULL);
            while (time(NULL) - start < 20) kill(-1, SIGSTOP);
            _exit(0);
        }
    }
    usleep(200000); /* the stoppers spinning by the time the program ends */
    return 0;
}
