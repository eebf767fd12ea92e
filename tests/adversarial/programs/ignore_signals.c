/* Trick: outlive a polite kill. The program and a child it starts ignore SIGTERM, SIGHUP and SIGINT
 * and sleep; only SIGKILL (or the end of its PID namespace) stops them. */
#include "common.h"
#include <signal.h>
#include <unistd.h>

int main(int argc, char **argv) {
    if (argc < 3) return 1;
    signal(SIGTERM, SIG_IGN);
    signal(SIGHUP, SIG_IGN);
    signal(SIGINT, SIG_IGN);
    fork();
    for (int i = 0; i < 600; ++i) usleep(100000);  /* bounded: a minute at most */
    return 0;
}
