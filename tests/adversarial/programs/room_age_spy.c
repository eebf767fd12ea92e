/* Tells whether its room was opened ahead, beside the previous run's check (a row's later run of a round), or
 * right before its run (the row's first of the round, which a rerun round can make another case), by the change
 * times (ctime: no utime sets it) of what the room's opening made: its program's hard link (linked and given
 * the epoch's times at the opening, then changed again by the previous room's removal, which unlinks its own
 * link of the same file) against its program's folder (made at the opening). Included before the example's
 * main: spy_on_room_age(in) returns 9 with a line on stderr where the program's link changed over 1 ms after its
 * folder was made (the room was opened ahead); rerun_by_room_age(in, first) always fails the case `first`
 * (so that a rerun round starts at the row's second) and idles 1 s where a later case's room was opened
 * right before it: a rerun. */
#include <libgen.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static double ctime_of(const char *path) {
    struct stat info;
    if (stat(path, &info) != 0) return 0;
    return info.st_ctim.tv_sec + info.st_ctim.tv_nsec * 1e-9;
}

/* how much later than its folder the program's file last changed (seconds; 0 where unknown) */
static double program_after_folder(void) {
    char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) return 0;
    exe[n] = 0;
    char folder[4096];
    strcpy(folder, exe);
    return ctime_of("/proc/self/exe") - ctime_of(dirname(folder));
}

static int spy_on_room_age(const char *in) {
    if (strstr(in, "warmup")) return 0;
    double later = program_after_folder();
    if (later > 0.001) { fprintf(stderr, "a room opened ahead: its program changed %.4f s after its folder\n", later); return 9; }
    return 0;
}

static int rerun_by_room_age(const char *in, const char *first_label) {
    if (strstr(in, "warmup")) return 0;
    if (strstr(in, first_label)) return 3;  /* the first case always fails: a rerun round starts at the second */
    if (program_after_folder() <= 0.001) usleep(1000000);  /* taken for a rerun: idled (it would sabotage it) */
    return 0;
}
