/* Trick: read another case's files. Lists the input's folder, its parent, the working folder and its
 * parent, /tmp (with -DSCAN_TMP: the machine's /tmp may hold anybody's files) and the folders given with
 * -DOTHER="dir1:dir2", and copies the first file it finds that is not its own input (another case's
 * input, output or reference) to OUT. Exits 2 when it found none. */
#include "common.h"
#include <dirent.h>
#include <unistd.h>

#ifndef OTHER
#define OTHER ""
#endif

static int steal_from(const char *dir, const char *own, const char *out) {
    DIR *d = opendir(dir);
    if (!d) return 0;
    struct dirent *e;
    char path[4096];
    while ((e = readdir(d)) != NULL) {
        const char *dot = strrchr(e->d_name, '.');
        if (!dot || (strcmp(dot, ".in") && strcmp(dot, ".out") && strcmp(dot, ".ref"))) continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (strcmp(e->d_name, own) == 0 || strcmp(path, out) == 0) continue;
        if (copy_file(path, out)) { fprintf(stderr, "read %s\n", path); closedir(d); return 1; }
    }
    closedir(d);
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 3) return 1;
    char own[256], dir[4096], others[4096];
    const char *slash = strrchr(argv[1], '/');
    snprintf(own, sizeof own, "%s", slash ? slash + 1 : argv[1]);
    snprintf(dir, sizeof dir, "%.*s", slash ? (int)(slash - argv[1]) : 1, slash ? argv[1] : ".");
    if (steal_from(dir, own, argv[2])) return 0;
    strncat(dir, "/..", sizeof dir - strlen(dir) - 1);
    if (steal_from(dir, own, argv[2]) || steal_from(".", own, argv[2]) || steal_from("..", own, argv[2])) return 0;
#ifdef SCAN_TMP
    if (steal_from("/tmp", own, argv[2])) return 0;
#endif
    snprintf(others, sizeof others, "%s", OTHER);
    for (char *part = strtok(others, ":"); part; part = strtok(NULL, ":"))
        if (steal_from(part, own, argv[2])) return 0;
    fprintf(stderr, "found no other case\n");
    return 2;
}
