#!/usr/bin/env bash
# A small class of CUDA submissions made from examples/course_program/hw4.cu, to try the class judge:
#   ada/    the course's layout: the course's example Makefile (all: seq-attention seq-flashattention hw4, whose
#           seq-* sources a submission does not have; -arch=sm_61, which CUDA 13 refuses) and hw4.cu
#   ben.cu  the same program, 0.2 s slower on every case (it sleeps before it starts)
#   cy.cu   wrong: the softmax scale is off by 1%, so every output misses the course's rule
#   dee.cu  does not build (a missing semicolon)
# Usage: bash tools/class_demo.sh FOLDER   (then: attnbench judge FOLDER --cases t01-t10)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source="$here/../examples/course_program/hw4.cu"
out="${1:?usage: bash tools/class_demo.sh FOLDER}"
mkdir -p "$out/ada"
cp "$source" "$out/ada/hw4.cu"
printf '%s\n' 'NVFLAGS = -std=c++11 -O3 -Xptxas="-v" -arch=sm_61' 'LDFLAGS = -lm' \
    'EXES = seq-attention seq-flashattention hw4' '.PHONY: all' 'all: $(EXES)' \
    'seq-attention: seq-attention.c' '	$(CC) -std=c99 -O3 -o $@ $? $(LDFLAGS)' \
    'seq-flashattention: seq-flashattention.c' '	$(CC) -std=c99 -O3 -o $@ $? $(LDFLAGS)' \
    'hw4: hw4.cu' '	nvcc $(NVFLAGS) -o $@ $? $(LDFLAGS)' | sed 's/\\t/\t/' > "$out/ada/Makefile"
sed -e 's/^#include <cmath>/#include <unistd.h>\n#include <cmath>/' \
    -e 's/^int main(int argc, char\*\* argv) {/int main(int argc, char** argv) {\n    usleep(200000);/' "$source" > "$out/ben.cu"
sed -e 's/1.4426950408889634f/1.4571219913f/' "$source" > "$out/cy.cu"
sed -e 's/fclose(in);/fclose(in)/' "$source" > "$out/dee.cu"
grep -q usleep "$out/ben.cu" && grep -q 1.4571219913f "$out/cy.cu" && ! grep -q 'fclose(in);' "$out/dee.cu"
echo "class_demo: ada, ben, cy, dee in $out"
