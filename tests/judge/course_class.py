"""A class made like the course's real hw4 submissions, for the judge's build tests.

Its programs have the real ones' habits: the course's example Makefile (`all:` names the course's own
seq-attention and seq-flashattention, whose sources a submission does not have; `-arch=sm_61`, which CUDA
13 refuses), `fread` of B, N, d then Q, K, V per batch item, a fixed tile, no CUDA error checked (a kernel
that cannot launch leaves the output as it was: zeros). Without a GPU their runs write zeros.
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

# One thread per query row, a fixed tile of keys in shared memory, online softmax; no error checks.
HW4_CU = r"""#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#ifdef NEEDS_STUDENT_TILE
#ifndef STUDENT_TILE
#error "STUDENT_TILE comes from the Makefile's NVFLAGS"
#endif
#endif
#define BC 32

__global__ void attention(const float *q, const float *k, const float *v, float *o, int n, int d) {
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= n) return;
    float scale = 1.0f / sqrtf((float)d);
    float m = -INFINITY, l = 0.0f;
    float acc[128];
    for (int x = 0; x < d; ++x) acc[x] = 0.0f;
    for (int j0 = 0; j0 < n; j0 += BC) {
        for (int j = j0; j < j0 + BC && j < n; ++j) {
            float s = 0.0f;
            for (int x = 0; x < d; ++x) s += q[row * d + x] * k[j * d + x];
            s *= scale;
            float m2 = fmaxf(m, s);
            float c = expf(m - m2), p = expf(s - m2);
            l = l * c + p;
            for (int x = 0; x < d; ++x) acc[x] = acc[x] * c + p * v[j * d + x];
            m = m2;
        }
    }
    for (int x = 0; x < d; ++x) o[row * d + x] = acc[x] / l;
}

int main(int argc, char **argv) {
    FILE *in = fopen(argv[1], "rb");
    int B, N, d;
    fread(&B, sizeof(int), 1, in);
    fread(&N, sizeof(int), 1, in);
    fread(&d, sizeof(int), 1, in);
    size_t one = (size_t)N * d;
    float *Q = (float *)malloc(B * one * sizeof(float)), *K = (float *)malloc(B * one * sizeof(float));
    float *V = (float *)malloc(B * one * sizeof(float)), *O = (float *)malloc(B * one * sizeof(float));
    for (int i = 0; i < B; ++i) {
        fread(Q + i * one, sizeof(float), one, in);
        fread(K + i * one, sizeof(float), one, in);
        fread(V + i * one, sizeof(float), one, in);
    }
    fclose(in);
    memset(O, 0x00, B * one * sizeof(float));
    float *dq, *dk, *dv, *dout;
    cudaMalloc(&dq, one * sizeof(float));
    cudaMalloc(&dk, one * sizeof(float));
    cudaMalloc(&dv, one * sizeof(float));
    cudaMalloc(&dout, one * sizeof(float));
    for (int i = 0; i < B; ++i) {
        cudaMemcpy(dq, Q + i * one, one * sizeof(float), cudaMemcpyHostToDevice);
        cudaMemcpy(dk, K + i * one, one * sizeof(float), cudaMemcpyHostToDevice);
        cudaMemcpy(dv, V + i * one, one * sizeof(float), cudaMemcpyHostToDevice);
        attention<<<(N + 127) / 128, 128>>>(dq, dk, dv, dout, N, d);
        cudaMemcpy(O + i * one, dout, one * sizeof(float), cudaMemcpyDeviceToHost);
    }
    FILE *out = fopen(argv[2], "wb");
    fwrite(O, sizeof(float), B * one, out);
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
