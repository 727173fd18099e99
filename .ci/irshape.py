#!/usr/bin/env python3
"""irshape: LLVM IR on stdin -> for each defined function, its instructions as
order-free dataflow hashes, one line each, sorted.

An instruction's hash covers its text with every value it reads replaced by
that value's hash (recursively, through the dataflow graph; a phi's operands
and basic-block labels are cut to their opcode or "BB", which keeps the graph
acyclic). Two functions print the same lines when they compute the same
operations from the same inputs in any order: the compiled program is the
same up to the scheduling that the back end redoes (ptxas, the AMDGPU
scheduler). Metadata (source locations of inline asm, loop hints) is dropped.
Used by .ci/same-program -ir.
"""
import hashlib
import re
import sys

REF = re.compile(r"%[-\w.]+")


def h(s):
    return hashlib.sha1(s.encode()).hexdigest()[:16]


BIN = re.compile(r"^((?:fadd|fmul|add|mul|and|or|xor)(?: \w+)* \w+) (<[^>]*>|[^,]+), (<[^>]*>|[^,]+)$")
CALL = re.compile(r"^(.*@llvm\.(?:maxnum|minnum|smax|smin|umax|umin)\.\w+\()(\w+ [^,]+), (\w+ [^,)]+)\)$")


def commute(text):
    """Orders the operands of a commutative operation (an exact one: a
    floating-point add or multiply of two values is commutative, not
    associative, and chains are left as they are)."""
    for pat in (BIN, CALL):
        m = pat.match(text)
        if m:
            a, b = sorted((m.group(2), m.group(3)))
            return m.group(1) + (" " if pat is BIN else "") + a + ", " + b + ("" if pat is BIN else ")")
    return text


def shape(body):
    defs, order, labels = {}, [], set()
    for line in body:
        line = re.sub(r",? ![\w.]+ !\d+", "", line).strip()
        line = re.sub(r"#\d+$", "", line).strip()
        if not line or line.startswith(";"):
            continue
        m = re.match(r"^([-\w.]+):", line)
        if m:
            labels.add("%" + m.group(1))
            continue
        # A logical and of two i1 (select c, b, false) is their and: the
        # optimiser writes either, depending on what it knows of b.
        line = re.sub(r"= select i1 (%[-\w.]+), i1 (%[-\w.]+), i1 false$", r"= and i1 \1, \2", line)
        m = re.match(r"^(%[-\w.]+) = (.*)$", line)
        if m:
            defs[m.group(1)] = m.group(2)
            order.append((m.group(1), m.group(2)))
        else:
            order.append((None, line))
    memo = {}

    def shallow(v):
        return defs[v].split("(")[0].split(" ")[0]

    def deep(v):
        if v in memo:
            return memo[v]
        text = defs[v]
        memo[v] = h(sub(text, text.startswith("phi ")))
        return memo[v]

    def sub(text, cut):
        return commute(sub1(text, cut))

    def sub1(text, cut):
        def rep(m):
            r = m.group(0)
            if r in labels:
                return "BB"
            if r not in defs:
                return r  # an argument or a global
            if cut or defs[r].startswith("phi "):
                return "<" + shallow(r) + ">"
            return "<" + deep(r) + ">"

        return REF.sub(rep, text)

    out = []
    for v, text in order:
        out.append(deep(v) if v else h(sub(text, False)))
    return sorted(out)


def main():
    lines = sys.stdin.read().split("\n")
    i = 0
    while i < len(lines):
        m = re.match(r"^define .*?@([\w.$]+)\(", lines[i])
        if not m:
            i += 1
            continue
        j = i + 1
        while lines[j] != "}":
            j += 1
        print("define @" + m.group(1))
        for s in shape(lines[i + 1 : j]):
            print("  " + s)
        i = j + 1


main()
