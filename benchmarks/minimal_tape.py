"""A floor for eager reverse mode in Python: the leanest tape that differentiates extended Rosenbrock.

It knows only the operators Rosenbrock uses, one tape, first order, no broadcasting, no Variables,
and its rules are closures over NumPy arrays. Whatever an eager engine adds for generality
(higher-order rules, several tapes, watching, batched sweeps) comes on top of this, so
``bench_overhead.py`` prints it next to autodiff as the reference for what an eager tape can reach.
"""
from __future__ import annotations

import numpy as np

_tape: list = []


class Node:
    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value

    def _record(self, value, rule):
        out = Node(value)
        _tape.append((out, rule))
        return out

    def __sub__(self, other):
        return self._record(self.value - other.value, lambda g: ((self, g), (other, -g)))

    def __rsub__(self, constant):
        return self._record(constant - self.value, lambda g: ((self, -g),))

    def __add__(self, other):
        return self._record(self.value + other.value, lambda g: ((self, g), (other, g)))

    def __rmul__(self, constant):
        return self._record(constant * self.value, lambda g: ((self, g * constant),))

    def __pow__(self, exponent):
        if exponent != 2:
            raise NotImplementedError("the floor tape squares only")
        x = self.value
        return self._record(x * x, lambda g: ((self, g * (2 * x)),))

    def __getitem__(self, index):
        return self._record(self.value[index], lambda g: ((self, (index, g)),))


def total(x: Node) -> Node:
    def rule(g):
        out = np.empty(x.value.shape)
        out.fill(g)
        return ((x, out),)
    return x._record(np.add.reduce(x.value), rule)


def gradient(f, x0: np.ndarray) -> np.ndarray:
    """df/dx at x0; slice cotangents are collected and added into one buffer."""
    _tape.clear()
    x = Node(x0)
    y = f(x)
    grads = {id(y): np.ones(())}
    for out, rule in reversed(_tape):
        g = _dense(grads.pop(id(out), None), out.value.shape)
        if g is None:
            continue
        for node, gi in rule(g):
            prev = grads.get(id(node))
            if type(gi) is tuple:  # (index, piece) of a slice read
                grads[id(node)] = [gi] if prev is None else prev + [gi]
            else:
                grads[id(node)] = gi if prev is None else prev + gi
    return _dense(grads[id(x)], x0.shape)


def _dense(g, shape):
    if type(g) is not list:
        return g
    out = np.zeros(shape)
    for index, piece in g:
        out[index] += piece
    return out
