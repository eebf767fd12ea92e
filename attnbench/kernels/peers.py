"""Peers, not kernels of ours: PyTorch and a Triton flash attention on the same float32 data, as Variant
entries in ladder order; their half-precision flavours (torch:fp16, torch:bf16, triton:bf16x3, triton:bf16x6)
show on the same cases what each precision buys and costs, each cell held to the course rule like the rest."""

from __future__ import annotations

from attnbench.kernels.variant import Constraints, Flavour, Variant

VARIANTS: list[Variant] = []


# A peer, not a kernel of ours: PyTorch on the same float32 data, where PyTorch is importable.
VARIANTS.append(
    Variant(
        name="torch",
        report="peer",
        technique="PyTorch scaled_dot_product_attention on the same data (its fastest backend for the inputs' type: "
        "float32 unless a flavour rounds them)",
        backend="torch",
        unit="tf32x3",  # its efficient backend runs float32 as 3xTF32 on mma.sync
        # half-precision inputs made from the float32 case outside the timed passes (a user who holds half data);
        # the output read back as float32 and checked against float64 like every cell
        flavours={
            "fp16": Flavour("Q, K and V rounded to float16 first (a flash or cuDNN backend); claims no "
                            "accuracy: fails the course rule where float16 is not enough, to show why",
                            unit="fp16", accuracy="none"),
            "bf16": Flavour("Q, K and V rounded to bfloat16 first; claims no accuracy: fails the course rule where "
                            "bfloat16 is not enough, to show why", unit="bf16", accuracy="none"),
        },
    )
)


# A peer written the way Triton users write attention (attnbench.backends.triton_kernel), where Triton and
# PyTorch are importable; the flavour's unit is the precision of its tl.dot.
VARIANTS.append(
    Variant(
        name="triton",
        report="peer",
        technique="a Triton flash-attention forward (one program per query block and item, online softmax in "
        "float32, tiles autotuned once per shape and GPU); tl.dot in 3xTF32",
        backend="triton",
        unit="tf32x3",  # on Hopper Triton's tl.dot issues wgmma, whose 3xTF32 ceiling is higher than mma.sync's
        min_capability=(8, 0),  # Triton supports NVIDIA GPUs from compute capability 8.0
        # d padded to a power of two >= 16 in one tile: beyond 256 the tiles no longer fit
        constraints=Constraints(max_head_dim=256),
        flavours={
            "ieee": Flavour("tl.dot in IEEE float32 (FFMA, no tensor cores)", unit="ffma"),
            "tf32": Flavour("tl.dot in plain TF32 (10-bit mantissa): fails the course rule, to show why", unit="tensor",
                            accuracy="none"),
            # where the installed Triton offers them (asked of Triton itself when the cell runs)
            "bf16x3": Flavour("tl.dot in 3xBF16 (each operand as two BF16 parts, three products); claims no "
                              "accuracy: the course rule decides", unit="bf16x3", accuracy="none"),
            "bf16x6": Flavour("tl.dot in 6xBF16 (each operand as three BF16 parts, six products); claims no "
                              "accuracy: the course rule decides", unit="bf16x6", accuracy="none"),
        },
    )
)
