"""The starting kernel that `attnbench new NAME` writes: a simple, correct kernel and its launch facts.

One thread per query row walks every key with an online softmax (running max and sum, the output
rescaled as the max grows), reading the separate q, k, v arrays the course's programs use. It takes
any N and any d up to 128 (HEAD_DIM is compiled in from the testcase's d), and passes `--check`.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from attnbench.errors import AttnbenchError
from attnbench.kernels.user import CONFIG_FILE, VARIANT_GROUPS, read_toml

STARTER_MAX_HEAD_DIM = 128
STARTER_ROWS_PER_BLOCK = 128
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")

KERNEL_TEMPLATE = r"""// {name}.cu: your attention kernel, started by `attnbench new {name}`.
//
// O = softmax(Q K^T / sqrt(d)) V for each batch item. One thread per query row walks every key
// with an online softmax: a running max m and sum l, the output rescaled whenever m grows, so no
// N x N score matrix is stored and any N works. Its launch facts (grid, block, defines, which d it
// takes) are the [variants.{name}] table in {config}.
//
//   attnbench run t02 out.bin --variant {name} --check
//   attnbench compare --variants {name},qreg,tf32x3 --cases t10,t22
//
// Arguments (named in `args` in {config}, passed in that order):
//   q, k, v     B x N x d floats each, row-major, for the chunk of B batch items being run
//   o           B x N x d floats, written by the kernel
//   N           sequence length
//   scale_log2  log2(e) / sqrt(d): scores are scaled so that exp2f gives exp(score / sqrt(d))
// HEAD_DIM is d, compiled in (defines in {config}), so the row arrays below live in registers.

#ifndef HEAD_DIM
#error "HEAD_DIM is defined by attnbench from the testcase's d (defines in {config})"
#endif

extern "C" __global__ void {name}_attention(const float* __restrict__ q, const float* __restrict__ k,
                                         const float* __restrict__ v, float* __restrict__ o,
                                         int N, float scale_log2) {{
    const int row = blockIdx.x * blockDim.x + threadIdx.x;  // the query row this thread owns
    const int b = blockIdx.y;                               // the batch item
    if (row >= N) return;
    const size_t item = (size_t)b * N * HEAD_DIM;           // first element of this item's arrays

    float q_row[HEAD_DIM], acc[HEAD_DIM];
    for (int x = 0; x < HEAD_DIM; ++x) {{
        q_row[x] = q[item + (size_t)row * HEAD_DIM + x] * scale_log2;  // scale once, not per key
        acc[x] = 0.0f;
    }}
    float m = -INFINITY;  // running max of the scaled scores
    float l = 0.0f;       // running sum of exp2(score - m)
    for (int j = 0; j < N; ++j) {{
        const float* k_row = k + item + (size_t)j * HEAD_DIM;
        const float* v_row = v + item + (size_t)j * HEAD_DIM;
        float s = 0.0f;
        for (int x = 0; x < HEAD_DIM; ++x) s += q_row[x] * k_row[x];
        const float m_new = fmaxf(m, s);
        const float rescale = exp2f(m - m_new);  // 0 for the first key, where m = -inf
        const float p = exp2f(s - m_new);
        l = l * rescale + p;
        for (int x = 0; x < HEAD_DIM; ++x) acc[x] = acc[x] * rescale + p * v_row[x];
        m = m_new;
    }}
    const float inv_l = 1.0f / l;
    for (int x = 0; x < HEAD_DIM; ++x) o[item + (size_t)row * HEAD_DIM + x] = acc[x] * inv_l;
}}
"""

TOML_TEMPLATE = """
# {name}: written by `attnbench new {name}`. Every number may be a formula of B, N and d using
# + - * // % and cdiv(a, b), min(...), max(...). Grids and workspaces are per chunk of B batch items.
[variants.{name}]
source = {source}
layout = "separate"       # q, k, v, o pointers, each B x N x d
technique = "one thread per query row, online softmax over every key"
max_head_dim = {max_d}        # q_row and acc are HEAD_DIM floats each, in registers
defines = {{ HEAD_DIM = "d" }}

[[variants.{name}.kernels]]
name = "{name}_attention"
grid = ["cdiv(N, {rows})", "B", 1]   # one block per {rows} query rows of each batch item
block = [{rows}, 1, 1]
smem = 0
args = ["q", "k", "v", "o", "N", "scale_log2"]
"""


class StarterError(AttnbenchError):
    """`attnbench new` cannot write its files."""

    exit_code = 2


@dataclass(frozen=True)
class StarterFiles:
    kernel: Path
    config: Path
    appended: bool  # the table was added to an existing attnbench.toml


def toml_string(text: str) -> str:
    """`text` as a TOML basic string: backslash and quote escaped, control characters as \\uXXXX, the rest as it is
    (TOML is UTF-8; a JSON string's \\ud83d-style surrogate pairs are no valid TOML). Written here because the
    standard library reads TOML but writes none."""
    escaped = "".join(f"\\u{ord(c):04X}" if (ord(c) < 0x20 and c != "\t") or ord(c) == 0x7F else
                      "\\\\" if c == "\\" else '\\"' if c == '"' else c for c in text)
    return f'"{escaped}"'


def write_starter(name: str, folder: Path) -> StarterFiles:
    """Write NAME.cu and its [variants.NAME] table in folder/attnbench.toml; never overwrite anything."""
    if not _NAME.fullmatch(name):
        raise StarterError(f"{name!r}: a variant made by `new` is named like a C identifier (letters, digits, _)")
    from attnbench.kernels.catalogue import REGISTRY

    if name in REGISTRY:
        raise StarterError(f"{name}: is a built-in variant; choose another name")
    if name in VARIANT_GROUPS:  # its table would be refused by every command that reads the file
        raise StarterError(f"{name}: names a group of variants (--variants {name}); choose another name")
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:  # a file of that name, or no permission: from Python a FileExistsError traceback
        raise StarterError(f"{folder}: cannot hold the new files ({exc.strerror or exc})") from None
    kernel, config = folder / f"{name}.cu", folder / CONFIG_FILE
    if kernel.exists():
        raise StarterError(f"{kernel}: already exists; not overwritten")
    if config.exists() and name in read_toml(config, StarterError).get("variants", {}):
        raise StarterError(f"{config}: already has [variants.{name}]; not overwritten")
    # The source is read relative to the file the link resolves to: through a linked (shared) attnbench.toml,
    # "NAME.cu" named a file beside the shared one, and the `run` new printed next failed at once.
    source = os.path.relpath(kernel.resolve(), Path(os.path.realpath(config)).parent)
    text = TOML_TEMPLATE.format(name=name, source=toml_string(source), max_d=STARTER_MAX_HEAD_DIM,
                                rows=STARTER_ROWS_PER_BLOCK)
    appended = config.exists()
    with open(kernel, "x") as f:
        f.write(KERNEL_TEMPLATE.format(name=name, config=CONFIG_FILE))
    try:
        with open(config, "a") as f:
            f.write(text if appended else text.lstrip("\n"))
    except OSError:  # an unwritable attnbench.toml: no NAME.cu left behind to block the next `new NAME`
        kernel.unlink()
        raise
    return StarterFiles(kernel, config, appended)
