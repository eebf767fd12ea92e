/* The warm-up builds folders deeper than PATH_MAX under its cache (17 names of 255 bytes, by descriptors),
 * and plants below them a link to /etc/shadow, a mode-04777 file and 64 MiB of files: a sealing that
 * walks by paths meets ENAMETOOLONG and keeps it all. Included before the example's main: plant_deep()
 * returns 8 with a line on stderr when a judged run finds what the warm-up planted. */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int plant_deep(void) {
    const char *cache = getenv("CUDA_CACHE_PATH");
    if (!cache) return 0;
    char name[256];
    memset(name, 'n', 255);
    name[255] = 0;
    int dir = open(cache, O_RDONLY | O_DIRECTORY);
    if (dir < 0) return 0;
    int found = 1;
    for (int i = 0; i < 17; ++i) {
        if (mkdirat(dir, name, 0755) == 0) found = 0;
        int below = openat(dir, name, O_RDONLY | O_DIRECTORY);
        close(dir);
        if (below < 0) return 0;
        dir = below;
    }
    struct stat info;
    if (found && fstatat(dir, "shadow", &info, AT_SYMLINK_NOFOLLOW) == 0) {
        fprintf(stderr, "the warm-up's deep folders reached this run\n");
        close(dir);
        return 8;
    }
    if (symlinkat("/etc/shadow", dir, "shadow") != 0) { close(dir); return 0; }
    int suid = openat(dir, "suid", O_WRONLY | O_CREAT, 04777);
    if (suid >= 0) { fchmod(suid, 04777); close(suid); }
    static char block[1 << 20];
    for (int i = 0; i < 64; ++i) {
        char file[32];
        snprintf(file, sizeof file, "blob%d", i);
        int fd = openat(dir, file, O_WRONLY | O_CREAT, 0644);
        if (fd < 0) break;
        ssize_t ignored = write(fd, block, sizeof block);
        (void)ignored;
        close(fd);
    }
    close(dir);
    return 0;
}
