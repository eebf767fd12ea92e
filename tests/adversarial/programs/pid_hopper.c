/* Trick: the right answer written late by a process that keeps changing its PID. The program writes an
 * output of the right size (all zeros) and exits; a child it left behind forks and lets its parent exit,
 * over and over (a new PID each time, so a sweep that lists /proc and then kills what it listed finds
 * only the dead), and after HOP_MS (default 500) ms computes the right answer and writes it over OUT.
 * The judge must have killed every process of the run before it reads the output. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define main attention_main
#include "../../../examples/cpu_program/attention.c"
#undef main

#ifndef HOP_MS
#define HOP_MS 500
#endif

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

int main(int argc, char **argv) {
    if (argc < 3) return 1;
    if (fork() == 0) {
        setsid();
        double start = now_ms();
        while (now_ms() - start < HOP_MS) {
            pid_t child = fork();
            if (child > 0) _exit(0);  /* the parent goes: the child carries on under a new PID */
            if (child < 0) usleep(1000);
        }
        return attention_main(argc, argv);
    }
    int dims[3] = {0, 0, 0};
    FILE *in = fopen(argv[1], "rb");
    if (!in || fread(dims, sizeof(int), 3, in) != 3) return 3;
    fclose(in);
    FILE *out = fopen(argv[2], "wb");
    if (!out) return 3;
    float zero = 0.0f;
    for (size_t i = 0; i < (size_t)dims[0] * dims[1] * dims[2]; ++i) fwrite(&zero, sizeof zero, 1, out);
    fclose(out);
    return 0;
}
