"""A class made like the course's real hw4 submissions, for the judge's build tests.

Its programs have the real ones' habits: the course's example Makefile (`all:` names the course's own
seq-attention and seq-flashattention, whose sources a submission does not have; `-arch=sm_61`, which CUDA
13 refuses), `fread` of B, N, d then Q, K, V per batch item, a fixed tile, no CUDA error checked (a kernel
that cannot launch leaves the output as it was: zeros). Without a GPU they are built, then NOT JUDGED
(attnbench.judge.gpu_needed): their runs there could only write zeros or fail.
"""

from __future__ import annotations

from pathlib import Path

# The course's example Makefile, as published (tabs for recipes).
COURSE_MAKEFILE = """CC = gcc
CXX = g++
NVCC = nvcc

CFLAGS = -std=c99 -O3
CXXFLAGS = -std=c++11 -O3
NVFLAGS = -std=c++11 -O3 -Xptxas="-v" -arch=sm_61

LDFLAGS = -lm
EXES = seq-attention seq-flashattention hw4

.PHONY: all
all: $(EXES)

clean:
\trm -f $(EXES)

seq-attention: seq-attention.c
\t$(CC) $(CFLAGS) -o $@ $? $(LDFLAGS)

seq-flashattention: seq-flashattention.c
\t$(CC) $(CFLAGS) -o $@ $? $(LDFLAGS)

hw4: hw4.cu
\t$(NVCC) $(NVFLAGS) -o $@ $? $(LDFLAGS)
"""

# A student's own: only hw4, its old -arch, and flags of their own (the -D must reach nvcc, or it fails).
ALL_HW4_MAKEFILE = """NVFLAGS = -std=c++11 -O3 -Xptxas="-v" -arch=sm_61{extra}
LDFLAGS = -lm

all: hw4

hw4: hw4.cu
\tnvcc $(NVFLAGS) -o $@ $? $(LDFLAGS)
"""
EXTRA_FLAGS = " --use_fast_math -maxrregcount=64 -DSTUDENT_TILE=32"

# One thread per query row, a fixed tile of keys, online softmax, d at most 64 (the course's); no error checks.
HW4_CU = r"""#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#ifdef NEEDS_STUDENT_TILE
#ifndef STUDENT_TILE
#error "STUDENT_TILE comes from the Makefile's NVFLAGS"
#endif
#endif
#define BR 64
#define BC 32

// One thread per query row of one batch item (blockIdx.y), keys in tiles of BC; Q, K, V of item b sit one
// after another in the input (Q0 K0 V0 Q1 ...), so the whole input is copied once.
__global__ void attention(const float *qkv, float *o, int n, int d) {
    int b = blockIdx.y, row = blockIdx.x * BR + threadIdx.x;
    if (row >= n) return;
    const float *q = qkv + (size_t)b * 3 * n * d, *k = q + (size_t)n * d, *v = k + (size_t)n * d;
    float scale = 1.0f / sqrtf((float)d);
    float m = -INFINITY, l = 0.0f;
    float acc[64];
    for (int x = 0; x < d; ++x) acc[x] = 0.0f;
    for (int j0 = 0; j0 < n; j0 += BC) {
        for (int j = j0; j < j0 + BC && j < n; ++j) {
            float s = 0.0f;
            for (int x = 0; x < d; ++x) s += q[(size_t)row * d + x] * k[(size_t)j * d + x];
            s *= scale;
            float m2 = fmaxf(m, s);
            float c = expf(m - m2), p = expf(s - m2);
            l = l * c + p;
            for (int x = 0; x < d; ++x) acc[x] = acc[x] * c + p * v[(size_t)j * d + x];
            m = m2;
        }
    }
    for (int x = 0; x < d; ++x) o[((size_t)b * n + row) * d + x] = acc[x] / l;
}

int main(int argc, char **argv) {
    FILE *in = fopen(argv[1], "rb");
    int B, N, d;
    fread(&B, sizeof(int), 1, in);
    fread(&N, sizeof(int), 1, in);
    fread(&d, sizeof(int), 1, in);
    size_t all = (size_t)B * N * d;
    float *QKV = (float *)malloc(3 * all * sizeof(float)), *O = (float *)malloc(all * sizeof(float));
    fread(QKV, sizeof(float), 3 * all, in);
    fclose(in);
    memset(O, 0x00, all * sizeof(float));
    float *dqkv, *dout;
    cudaMalloc(&dqkv, 3 * all * sizeof(float));
    cudaMalloc(&dout, all * sizeof(float));
    cudaMemcpy(dqkv, QKV, 3 * all * sizeof(float), cudaMemcpyHostToDevice);
    dim3 grid((N + BR - 1) / BR, B);
    attention<<<grid, BR>>>(dqkv, dout, N, d);
    cudaMemcpy(O, dout, all * sizeof(float), cudaMemcpyDeviceToHost);
    FILE *out = fopen(argv[2], "wb");
    fwrite(O, sizeof(float), all, out);
    fclose(out);
    return 0;
}
"""

HIP = "#include <hip/hip_runtime.h>\nint main() { return 0; }\n"

# name -> {file: text}; what each row's note must say of its build (or why it is not judged)
SUBMISSIONS: dict[str, dict[str, str]] = {
    "course_makefile": {"Makefile": COURSE_MAKEFILE, "hw4.cu": HW4_CU},
    "all_hw4": {"Makefile": ALL_HW4_MAKEFILE.format(extra=""), "hw4.cu": HW4_CU},
    "own_flags": {"Makefile": ALL_HW4_MAKEFILE.format(extra=EXTRA_FLAGS),
                  "hw4.cu": "#define NEEDS_STUDENT_TILE\n" + HW4_CU},
    "cu_only": {"hw4.cu": HW4_CU},
    "hip_only": {"hw4.hip": HIP},
    "hip_beside": {"hw4.cu": HW4_CU, "hw4.hip": HIP},
    "makefile_fails": {"Makefile": "hw4: hw4.cu\n\t./no-such-compiler -o hw4 hw4.cu\n", "hw4.cu": HW4_CU},
    "nothing_builds": {"Makefile": "hw4: hw4.cu\n\tfalse\n", "hw4.cu": HW4_CU.replace("return 0;\n}", "return 0\n}")},
}


def make_course_class(folder: Path) -> Path:
    """Write the class's folders into `folder`; returns it."""
    for name, files in SUBMISSIONS.items():
        (folder / name).mkdir()
        for file, text in files.items():
            (folder / name / file).write_text(text)
    return folder
