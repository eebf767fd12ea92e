/* The warm-up run is untimed and the only one that writes the CUDA cache: this part of a submission fills
 * the cache there (each judged run would then copy it, untimed). Included before the example's main:
 * fill_cache() returns 4 when it finds its own filling (the cache was carried into a judged run), else
 * fills the cache with `count` files of `bytes` bytes and returns 0. */
#include <stdio.h>
#include <stdlib.h>

static int fill_cache(int count, size_t bytes) {
    const char *cache = getenv("CUDA_CACHE_PATH");
    if (!cache) return 0;
    char path[4096];
    snprintf(path, sizeof path, "%s/filler0", cache);
    FILE *seen = fopen(path, "rb");
    if (seen) { fclose(seen); return 4; }
    char *block = calloc(1, bytes);
    for (int i = 0; block && i < count; ++i) {
        snprintf(path, sizeof path, "%s/filler%d", cache, i);
        FILE *f = fopen(path, "wb");
        if (!f) break;
        fwrite(block, 1, bytes, f);
        fclose(f);
    }
    free(block);
    return 0;
}
