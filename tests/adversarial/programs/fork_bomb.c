/* Trick: a fork bomb, bounded so a test can run it: up to 10,000 children that each sleep 5 s.
 * Prints how many forks succeeded; exits 4 when a fork failed (it was contained), 0 when all succeeded,
 * without an output file either way. */
#include "common.h"
#include <unistd.h>

int main(int argc, char **argv) {
    if (argc < 3) return 1;
    int made = 0;
    for (int i = 0; i < 10000; ++i) {
        pid_t pid = fork();
        if (pid == 0) { sleep(5); _exit(0); }
        if (pid < 0) break;
        ++made;
    }
    fprintf(stderr, "forked %d children\n", made);
    return made < 10000 ? 4 : 0;
}
