/* Keyrings outlive any box: a session keyring is inherited through fork, exec and bwrap alike. This
 * part of a submission looks for the judge's keys in the session keyring it inherited, tries to read and
 * overwrite them, and leaves a counter key for its own next run (and the next submission). Included
 * before the example's main: keyring_trick() returns how many of its tries worked (0: none, as it should). */
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define KEYCTL_GET_KEYRING_ID 0
#define KEYCTL_UPDATE 2
#define KEYCTL_READ 11
#define KEYCTL_SEARCH 10
#define SESSION_RING (-3)
#define USER_RING (-4)

static int keyring_trick(void) {
    int worked = 0;
    char payload[512];
    long ring = syscall(SYS_keyctl, KEYCTL_GET_KEYRING_ID, SESSION_RING, 0);
    long canary = syscall(SYS_keyctl, KEYCTL_SEARCH, SESSION_RING, "user", "attnbench-test:canary", 0);
    if (canary >= 0) {
        long n = syscall(SYS_keyctl, KEYCTL_READ, canary, payload, sizeof payload - 1);
        if (n >= 0) { payload[n < (long)sizeof payload - 1 ? n : (long)sizeof payload - 1] = 0;
                      fprintf(stderr, "stole: %s\n", payload); ++worked; }
        if (syscall(SYS_keyctl, KEYCTL_UPDATE, canary, "OVERWRITTEN", 11) == 0) ++worked;
    }
    long counter = syscall(SYS_keyctl, KEYCTL_SEARCH, SESSION_RING, "user", "attnbench-test:counter", 0);
    if (counter < 0) counter = syscall(SYS_keyctl, KEYCTL_SEARCH, USER_RING, "user", "attnbench-test:counter", 0);
    if (counter >= 0) { fprintf(stderr, "a run before me left a counter\n"); ++worked; }
    if (syscall(SYS_add_key, "user", "attnbench-test:counter", "1", 1, SESSION_RING) >= 0) ++worked;
    if (syscall(SYS_add_key, "user", "attnbench-test:counter", "1", 1, USER_RING) >= 0) ++worked;
    (void)ring;
    return worked;
}
