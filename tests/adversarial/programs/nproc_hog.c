/* Runs side by side share a user when they all run as one uid (nobody), and RLIMIT_NPROC counts every
 * process of that user: this part of a submission forks until fork fails and holds its children a while,
 * so that a run beside it cannot start a thread. Included before the example's main. */
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

static void hog_processes(void) {
    pid_t children[4096];
    int n = 0;
    while (n < 4096) {
        pid_t child = fork();
        if (child < 0) break;
        if (child == 0) { usleep(1500000); _exit(0); }
        children[n++] = child;
    }
    for (int i = 0; i < n; ++i) waitpid(children[i], NULL, 0);
}
