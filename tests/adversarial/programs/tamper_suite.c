/* Trick: change the suite itself. Overwrites the data folder's input and reference of its case
 * (-DDATA_DIR="...") and the input file it was given, with zeros, so that later runs check against
 * a reference it chose. Prints what it changed; exits 2 when it could change nothing outside its own
 * folder. */
#include "common.h"

#ifndef DATA_DIR
#define DATA_DIR "/nonexistent"
#endif

static int overwrite(const char *path) {
    FILE *f = fopen(path, "r+b");
    if (!f) return 0;
    char zeros[64] = {0};
    fwrite(zeros, 1, sizeof zeros, f);
    fclose(f);
    fprintf(stderr, "changed %s\n", path);
    return 1;
}

int main(int argc, char **argv) {
    if (argc < 3) return 1;
    char name[256], path[4096];
    case_name(argv[1], name, sizeof name);
    int changed = 0;
    snprintf(path, sizeof path, "%s/%s.in", DATA_DIR, name);
    changed += overwrite(path);
    snprintf(path, sizeof path, "%s/%s.ref", DATA_DIR, name);
    changed += overwrite(path);
    overwrite(argv[1]);  /* its own copy: allowed, and harmless */
    if (!changed) fprintf(stderr, "changed nothing outside its folder\n");
    return changed ? 0 : 2;
}
