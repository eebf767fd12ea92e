"""Launch-fact expressions: integer arithmetic in B, N and d, evaluated without `eval`.

A user's grid, block, shared memory, workspace, steps and define values are short formulas such as
`cdiv(N, 64)` or `4 * (2 * 64 * d + 64)`. They are parsed with `ast` and checked node by node
before anything is evaluated; only these are accepted:

- integer literals (no floats, strings or booleans);
- the names B, N and d (the chunk's batch items, sequence length and head dimension);
- `+`, `-`, `*`, `//` (floor division), `%`, unary minus, and parentheses;
- the calls `cdiv(a, b)` (ceiling division), `min(a, b, ...)` and `max(a, b, ...)`.

`/` is refused (launch facts are whole numbers: write `//` or `cdiv`), and so is `**` (an exponent
can build a number too large to hold). Every intermediate value must stay within 64 bits.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Callable

from attnbench.errors import AttnbenchError

NAMES = ("B", "N", "d")
MAX_TEXT = 500  # characters; launch facts are short formulas
LIMIT = 2**63 - 1  # every value, intermediate or final, must fit a signed 64-bit integer


class ExpressionError(AttnbenchError):
    """An expression that is not allowed, or that cannot be evaluated for a shape."""

    exit_code = 2


def cdiv(a: int, b: int) -> int:
    """Ceiling division of integers."""
    return -(-a // b)


_FUNCTIONS: dict[str, tuple[Callable[..., int], int]] = {"cdiv": (cdiv, 2), "min": (min, 0), "max": (max, 0)}
_OPERATORS: dict[type, Callable[[int, int], int]] = {
    ast.Add: lambda a, b: a + b,
    ast.Sub: lambda a, b: a - b,
    ast.Mult: lambda a, b: a * b,
    ast.FloorDiv: lambda a, b: a // b,
    ast.Mod: lambda a, b: a % b,
}
_REFUSED_OPERATORS = {
    ast.Div: "`/` is not allowed: launch facts are whole numbers, use `//` or cdiv(a, b)",
    ast.Pow: "`**` is not allowed: write the product out",
}


def _refuse(node: ast.AST) -> str:
    """Why a node is not allowed, in words."""
    if isinstance(node, ast.BinOp) and type(node.op) in _REFUSED_OPERATORS:
        return _REFUSED_OPERATORS[type(node.op)]
    if isinstance(node, ast.BinOp):
        return f"the operator {type(node.op).__name__} is not allowed (only + - * // %)"
    if isinstance(node, ast.Name):
        return f"unknown name {node.id!r} (only B, N, d and the calls cdiv, min, max)"
    if isinstance(node, ast.Attribute):
        return "attribute access is not allowed"
    if isinstance(node, ast.Constant):
        return f"{type(node.value).__name__} {node.value!r} is not allowed (only whole numbers)"
    if isinstance(node, ast.Call):
        return "only the calls cdiv(a, b), min(a, b, ...) and max(a, b, ...) are allowed"
    return f"{type(node).__name__} is not allowed in a launch fact (only arithmetic in B, N, d)"


def _check(node: ast.AST) -> None:
    """Refuse any node outside the grammar in the module docstring."""
    if isinstance(node, ast.Constant):
        if type(node.value) is not int:
            raise ExpressionError(_refuse(node))
        if abs(node.value) > LIMIT:
            raise ExpressionError(f"the number {node.value} does not fit in 64 bits")
    elif isinstance(node, ast.Name):
        if node.id not in NAMES or not isinstance(node.ctx, ast.Load):
            raise ExpressionError(_refuse(node))
    elif isinstance(node, ast.BinOp):
        if type(node.op) not in _OPERATORS:
            raise ExpressionError(_refuse(node))
        _check(node.left)
        _check(node.right)
    elif isinstance(node, ast.UnaryOp):
        if not isinstance(node.op, (ast.USub, ast.UAdd)):
            raise ExpressionError(f"the operator {type(node.op).__name__} is not allowed (only unary minus)")
        _check(node.operand)
    elif isinstance(node, ast.Call):
        if not isinstance(node.func, ast.Name) or node.func.id not in _FUNCTIONS or node.keywords:
            raise ExpressionError(_refuse(node))
        name = node.func.id
        if any(isinstance(arg, ast.Starred) for arg in node.args):
            raise ExpressionError(f"{name}() takes plain arguments, not *args")
        wanted = _FUNCTIONS[name][1]
        if wanted and len(node.args) != wanted:
            raise ExpressionError(f"{name}() takes {wanted} arguments, {len(node.args)} given")
        if not wanted and len(node.args) < 2:
            raise ExpressionError(f"{name}() takes at least 2 arguments, {len(node.args)} given")
        for arg in node.args:
            _check(arg)
    else:
        raise ExpressionError(_refuse(node))


def _value(node: ast.expr, names: dict[str, int]) -> int:
    if isinstance(node, ast.Constant):
        result = node.value
    elif isinstance(node, ast.Name):
        result = names[node.id]
    elif isinstance(node, ast.BinOp):
        left, right = _value(node.left, names), _value(node.right, names)
        if isinstance(node.op, (ast.FloorDiv, ast.Mod)) and right == 0:
            raise ExpressionError("division by zero")
        result = _OPERATORS[type(node.op)](left, right)
    elif isinstance(node, ast.UnaryOp):
        operand = _value(node.operand, names)
        result = -operand if isinstance(node.op, ast.USub) else operand
    else:
        assert isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
        args = [_value(arg, names) for arg in node.args]
        if node.func.id == "cdiv" and args[1] == 0:
            raise ExpressionError("division by zero in cdiv")
        result = _FUNCTIONS[node.func.id][0](*args)
    if abs(result) > LIMIT:
        raise ExpressionError("a value does not fit in 64 bits")
    return result


@dataclass(frozen=True)
class Expression:
    """A checked launch-fact formula; call it with B, N and d."""

    text: str
    tree: ast.expr

    def __call__(self, B: int, N: int, d: int) -> int:
        """The value for one shape; ExpressionError for a division by zero or a value beyond 64 bits."""
        return _value(self.tree, {"B": B, "N": N, "d": d})

    def __str__(self) -> str:
        return self.text


def parse_expression(source: str | int) -> Expression:
    """Check a formula (text, or a whole number as TOML gives it) and return it ready to evaluate.

    Raises ExpressionError with one line saying what is not allowed.
    """
    if isinstance(source, bool) or not isinstance(source, (str, int)):
        raise ExpressionError(f"expected a whole number or a formula in quotes, got {type(source).__name__} {source!r}")
    text = str(source).strip()
    if not text:
        raise ExpressionError("the formula is empty")
    if len(text) > MAX_TEXT:
        raise ExpressionError(f"the formula is {len(text)} characters long; at most {MAX_TEXT}")
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError as exc:
        raise ExpressionError(f"{text!r} is not a formula ({exc.msg})") from None
    except (RecursionError, MemoryError, ValueError):
        raise ExpressionError(f"{text[:40]!r}... is nested too deeply") from None
    try:
        _check(tree.body)
    except RecursionError:
        raise ExpressionError(f"{text[:40]!r}... is nested too deeply") from None
    return Expression(text, tree.body)
