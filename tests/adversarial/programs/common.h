/* Shared by the adversarial programs: the case's name and shape, read the way a real program would. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The case's name: the input's file name without ".in" ("t01" for ".../t01.in"). */
static inline void case_name(const char *in, char *name, size_t size) {
    const char *base = strrchr(in, '/');
    base = base ? base + 1 : in;
    snprintf(name, size, "%s", base);
    char *dot = strrchr(name, '.');
    if (dot) *dot = '\0';
}

/* B*N*d from the input's header; 0 when it cannot be read. */
static inline size_t output_floats(const char *in) {
    int32_t head[3] = {0, 0, 0};
    FILE *f = fopen(in, "rb");
    if (!f) return 0;
    size_t got = fread(head, sizeof(int32_t), 3, f);
    fclose(f);
    return got == 3 ? (size_t)head[0] * head[1] * head[2] : 0;
}

/* Copy the file at src to dst; 1 on success. */
static inline int copy_file(const char *src, const char *dst) {
    FILE *in = fopen(src, "rb");
    if (!in) return 0;
    FILE *out = fopen(dst, "wb");
    if (!out) { fclose(in); return 0; }
    char buf[65536];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, in)) > 0) fwrite(buf, 1, n, out);
    fclose(in);
    return fclose(out) == 0;
}
