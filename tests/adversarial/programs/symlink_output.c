/* Trick: make OUT a symbolic link to the reference's known location (-DDATA_DIR="..."), so that a
 * judge that opens OUT outside the sandbox reads the reference itself. */
#include "common.h"
#include <unistd.h>

#ifndef DATA_DIR
#define DATA_DIR "/nonexistent"
#endif

int main(int argc, char **argv) {
    if (argc < 3) return 1;
    char name[256], path[4096];
    case_name(argv[1], name, sizeof name);
    snprintf(path, sizeof path, "%s/%s.ref", DATA_DIR, name);
    return symlink(path, argv[2]) == 0 ? 0 : 3;
}
