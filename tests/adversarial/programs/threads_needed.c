/* An honest program that starts threads (as an OpenMP or pthread CPU reference would): it fails if a
 * thread cannot be made. It starts them a little after launch, while a run beside it may hold processes. */
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

static void *idle_thread(void *arg) { usleep(200000); return arg; }

static int start_threads(void) {
    usleep(300000);
    pthread_t threads[16];
    for (int i = 0; i < 16; ++i)
        if (pthread_create(&threads[i], NULL, idle_thread, NULL) != 0) {
            fprintf(stderr, "pthread_create failed\n");
            return 1;
        }
    for (int i = 0; i < 16; ++i) pthread_join(threads[i], NULL);
    return 0;
}
