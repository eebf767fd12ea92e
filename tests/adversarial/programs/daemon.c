/* Trick: escape the kill as a daemon: daemon(3) forks, detaches from the terminal and the session,
 * and changes to /; the daemon lives on after the program's first process has exited. */
#include "common.h"
#include <unistd.h>

int main(int argc, char **argv) {
    if (argc < 3) return 1;
    if (daemon(0, 0) != 0) return 3;
    for (int i = 0; i < 600; ++i) usleep(100000);  /* bounded: a minute at most */
    return 0;
}
