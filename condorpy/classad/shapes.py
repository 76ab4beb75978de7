"""Reading a syntax tree's shape: the operands of a chain, a long left-nested run,
an attribute compared with a constant, and the stock policy shapes that compile to
one fused closure (fastpaths.py). Decided from the tree alone, so that nothing is
compiled twice.
"""

from __future__ import annotations

from typing import Any, Mapping, Protocol

from condorpy.classad.ast import AttrRef, Binary, Call, Literal, Node, Paren
from condorpy.classad.evaluation import Fn
from condorpy.classad.fastpaths import CMP_OPS, PYOPS, SCALARS, Leaf, make_and_leaf_or, \
    make_cmp_arith_aa, make_cmp_ite_is
from condorpy.classad.functions.registry import FunctionSpec
from condorpy.classad.functions.special import if_then_else
from condorpy.classad.values import Error, Undefined

class NodeCompiler(Protocol):
    """What the fused shapes need of the compiler: its function table, and the closure
    and constant value (or NOCONST) of a node."""

    functions: Mapping[str, FunctionSpec]

    def compile(self, node: Node) -> tuple[Fn, Any]: ...

def is_test(node: Node) -> tuple[str, Node, Any, bool] | None:
    """(name, left, constant, negated) when ``node`` is ``name is/isnt constant`` with
    ``name`` an unscoped attribute and a literal constant (scalar, undefined or error):
    HTCondor's idiom ifThenElse(X =!= UNDEFINED, ...)."""
    while type(node) is Paren:
        node = node.inner  # type: ignore[attr-defined]
    if type(node) is not Binary or node.op not in ("is", "isnt"):  # type: ignore[attr-defined]
        return None
    la = attr_name(node.left)  # type: ignore[attr-defined]
    right = node.right  # type: ignore[attr-defined]
    while type(right) is Paren:
        right = right.inner  # type: ignore[attr-defined]
    if la is None or type(right) is not Literal:
        return None
    k = right.value  # type: ignore[attr-defined]
    if not (type(k) in SCALARS or k is Undefined or k is Error):
        return None
    return la, node.left, k, node.op == "isnt"  # type: ignore[attr-defined]


def chain_first(node: Node, op: str) -> Node:
    """The first operand of the chain chain_of(node, op) returns."""
    while True:
        left = node.left  # type: ignore[attr-defined]
        while type(left) is Paren:
            left = left.inner  # type: ignore[attr-defined]
        if type(left) is not Binary or left.op != op:  # type: ignore[attr-defined]
            return left  # type: ignore[no-any-return]
        node = left


def attr_name(node: Node, scope: str = "") -> str | None:
    """The lower-cased name when ``node`` is a plain unscoped attribute reference (or one
    of ``scope``): the operators then probe the scope's (the target's) constants inline
    before calling the lookup."""
    while type(node) is Paren:
        node = node.inner  # type: ignore[attr-defined]
    if type(node) is AttrRef and node.scope.lower() == scope:  # type: ignore[attr-defined]
        return node.name.lower()  # type: ignore[attr-defined,no-any-return]
    return None


# A left-nested run of (non-logical) operators at least this long compiles to one loop
# (Compiler._c_spine); shorter ones keep an inline closure per operator, the fast paths.
SPINE_MIN = 16


def spine_of(node: Node) -> tuple[Node, list[tuple[str, Node]]] | None:
    """(first operand, [(operator, right operand), ...] in evaluation order) when
    ``node`` heads a left-nested run of SPINE_MIN or more arithmetic, comparison or
    bit operators; else None. ``&&``/``||`` are not in it (they short-circuit: chain_of)."""
    links: list[tuple[str, Node]] = []
    n = node
    while type(n) is Binary and n.op != "&&" and n.op != "||":  # type: ignore[attr-defined]
        links.append((n.op, n.right))  # type: ignore[attr-defined]
        n = n.left  # type: ignore[attr-defined]
        if len(links) < SPINE_MIN and type(n) is not Binary:
            return None
    if len(links) < SPINE_MIN:
        return None
    links.reverse()
    return n, links


def chain_of(node: Node, op: str) -> list[Node]:
    """The operands of a left-nested chain ``a op b op c`` (parentheses looked through)."""
    out: list[Node] = []
    while True:
        out.append(node.right)  # type: ignore[attr-defined]
        left = node.left  # type: ignore[attr-defined]
        while type(left) is Paren:
            left = left.inner  # type: ignore[attr-defined]
        if type(left) is not Binary or left.op != op:  # type: ignore[attr-defined]
            out.append(left)
            break
        node = left
    out.reverse()
    return out


def fuse_cmp_ite_is(node: Binary, compiler: NodeCompiler) -> Fn | None:
    """``ifThenElse(X is K, a, b) OP number`` (Desktop's SUSPEND) as one closure: what
    make_ite_is and then make_compare's closure return. Decided from the tree's
    shape alone so that nothing is compiled twice."""
    left, right = node.left, node.right
    while type(left) is Paren:
        left = left.inner  # type: ignore[attr-defined]
    while type(right) is Paren:
        right = right.inner  # type: ignore[attr-defined]
    if type(right) is not Literal or type(left) is not Call \
            or len(left.args) != 3:  # type: ignore[attr-defined]
        return None
    c = right.value  # type: ignore[attr-defined]
    if type(c) is not int and type(c) is not float:
        return None
    spec = compiler.functions.get(left.name.lower())  # type: ignore[attr-defined]
    if spec is None or spec.impl is not if_then_else:
        return None
    args = left.args  # type: ignore[attr-defined]
    test = is_test(args[0])
    if test is None:
        return None
    la, attr_node, k, negate = test
    tf, tk = compiler.compile(args[1])
    ef, ek = compiler.compile(args[2])
    return make_cmp_ite_is(node.op, c, la, compiler.compile(attr_node)[0], k, negate, tf, ef,
                           tk, ek)


def fuse_and_leaf_or(node: Binary, compiler: NodeCompiler) -> Fn | None:
    """``leaf && (b || c)`` (Desktop's START) as one closure: make_and_leaf with the
    closure make_or would make run inline. Decided from the tree's shape alone so that
    nothing is compiled twice."""
    operands = chain_of(node, "&&")
    if len(operands) != 2:
        return None
    right = operands[1]
    while type(right) is Paren:
        right = right.inner  # type: ignore[attr-defined]
    if type(right) is not Binary or right.op != "||":  # type: ignore[attr-defined]
        return None
    ors = chain_of(right, "||")
    if len(ors) != 2:
        return None
    leaf = leaf_test(operands[0], compiler)
    if leaf is None or leaf[1]:
        return None
    return make_and_leaf_or(leaf, compiler.compile(operands[0])[0], compiler.compile(ors[0])[0],
                            compiler.compile(ors[1])[0])


def fuse_cmp_arith(node: Binary, compiler: NodeCompiler) -> Fn | None:
    """``a OP b CMP number`` with a, b unscoped attributes and OP one of + - *
    (Desktop's ``(LoadAvg - CondorLoadAvg) <= 0.3``) as one closure: what make_arith's
    arith_aa and then make_compare's cmp_num return."""
    left, right = node.left, node.right
    while type(left) is Paren:
        left = left.inner  # type: ignore[attr-defined]
    while type(right) is Paren:
        right = right.inner  # type: ignore[attr-defined]
    if type(right) is not Literal or type(left) is not Binary \
            or left.op not in ("+", "-", "*"):  # type: ignore[attr-defined]
        return None
    c = right.value  # type: ignore[attr-defined]
    if type(c) is not int and type(c) is not float:
        return None
    la = attr_name(left.left)  # type: ignore[attr-defined]
    ra = attr_name(left.right)  # type: ignore[attr-defined]
    if la is None or ra is None:
        return None
    return make_cmp_arith_aa(node.op, c, left.op, la, ra,  # type: ignore[attr-defined]
                             compiler.compile(left.left)[0],  # type: ignore[attr-defined]
                             compiler.compile(left.right)[0])  # type: ignore[attr-defined]


def leaf_test(node: Node, compiler: NodeCompiler) -> "Leaf | None":
    """How to test ``node`` inline when it compares an attribute (unscoped or
    TARGET.) with a constant number or string."""
    while type(node) is Paren:
        node = node.inner  # type: ignore[attr-defined]
    if type(node) is not Binary or node.op not in CMP_OPS:  # type: ignore[attr-defined]
        return None
    on_target = False
    la = attr_name(node.left)  # type: ignore[attr-defined]
    if la is None:
        la = attr_name(node.left, "target")  # type: ignore[attr-defined]
        on_target = True
    if la is None:
        return None
    k = compiler.compile(node.right)[1]  # type: ignore[attr-defined]
    tk = type(k)
    if tk is str:
        k = k.lower()
    elif tk is not int and tk is not float:
        return None
    return la, on_target, PYOPS[node.op], k, tk  # type: ignore[attr-defined]
