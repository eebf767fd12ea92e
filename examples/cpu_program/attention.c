/* A whole attention program in plain C, in the course's shape: read the input file, compute, write
 * the output. It runs on any CPU, so `attnbench judge` can be tried (and tested) without a GPU.
 *
 *   cc -O2 -o attention attention.c -lm
 *   ./attention IN OUT
 *   attnbench judge ./attention --cases t01,t02 --time-limits none
 *
 * Input (little-endian): int32 B, N, d, then Q_i, K_i, V_i (N*d float32 each) for each batch item.
 * Output: O as B*N*d float32, no header. O_i = softmax(Q_i K_i^T / sqrt(d)) V_i, row by row, with the
 * row maximum subtracted before exp (so no overflow) and sums kept in double.
 *
 * Built with -DOFF_BY_ONE it adds 0.01 to one element of the output (batch B-1, row N/2, column 0):
 * a program that is wrong in exactly one place, for the judge's tests.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

static int fail(const char *what, const char *path) {
    fprintf(stderr, "attention: %s %s\n", what, path);
    return 1;
}

/* One batch item: out (N x d) = softmax(q k^T * scale) v. */
static void attention(const float *q, const float *k, const float *v, float *out, int N, int d,
                      double *scores, double *acc) {
    const double scale = 1.0 / sqrt((double)d);
    for (int i = 0; i < N; ++i) {
        double max = -INFINITY;
        for (int j = 0; j < N; ++j) {
            double dot = 0.0;
            for (int x = 0; x < d; ++x) dot += (double)q[(size_t)i * d + x] * k[(size_t)j * d + x];
            scores[j] = dot * scale;
            if (scores[j] > max) max = scores[j];
        }
        double sum = 0.0;
        for (int x = 0; x < d; ++x) acc[x] = 0.0;
        for (int j = 0; j < N; ++j) {
            double p = exp(scores[j] - max);
            sum += p;
            for (int x = 0; x < d; ++x) acc[x] += p * v[(size_t)j * d + x];
        }
        for (int x = 0; x < d; ++x) out[(size_t)i * d + x] = (float)(acc[x] / sum);
    }
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: %s INPUT OUTPUT\n", argv[0]);
        return 2;
    }
    FILE *in = fopen(argv[1], "rb");
    if (!in) return fail("cannot open", argv[1]);
    int dims[3];
    if (fread(dims, sizeof(int), 3, in) != 3) return fail("no header in", argv[1]);
    const int B = dims[0], N = dims[1], d = dims[2];
    const size_t item = (size_t)N * d;
    float *qkv = malloc(3 * item * sizeof(float));
    float *out = malloc((size_t)B * item * sizeof(float));
    double *scores = malloc((size_t)N * sizeof(double));
    double *acc = malloc((size_t)d * sizeof(double));
    if (!qkv || !out || !scores || !acc) return fail("out of memory reading", argv[1]);
    for (int b = 0; b < B; ++b) {  /* Q_b, K_b, V_b are stored one after another */
        if (fread(qkv, sizeof(float), 3 * item, in) != 3 * item) return fail("truncated input", argv[1]);
        attention(qkv, qkv + item, qkv + 2 * item, out + (size_t)b * item, N, d, scores, acc);
    }
    fclose(in);
#ifdef OFF_BY_ONE
    out[(size_t)(B - 1) * item + (size_t)(N / 2) * d] += 0.01f;
#endif
    FILE *o = fopen(argv[2], "wb");
    if (!o) return fail("cannot write", argv[2]);
    if (fwrite(out, sizeof(float), (size_t)B * item, o) != (size_t)B * item) return fail("short write to", argv[2]);
    fclose(o);
    free(qkv), free(out), free(scores), free(acc);
    return 0;
}
