"""autodiff.jit.content: two recordings have the same key exactly when they record the same program
(ops, operands, constants' bytes); branches, Variables and rules of the user's have none."""
import numpy as np

import autodiff as ad
from autodiff.jit import content_key, trace, unchanged
from autodiff.jit.content import MAX_BYTES


def key_of(f, x):
    found = content_key(trace(f, x))
    return None if found is None else found[0]


def test_recordings_of_one_program_at_two_points_have_one_key():
    c = np.array([1.0, 2.0])

    def f(x):
        return np.sum((x - c) ** 2 * np.exp(-x)) + 0.5 * x[0]
    assert key_of(f, np.zeros(2)) == key_of(f, np.array([3.0, -1.0]))
    assert key_of(f, np.zeros(2)) == key_of(lambda x: f(x), np.zeros(2))   # another function, the same program


def test_a_changed_constant_or_op_changes_the_key():
    c = np.array([1.0, 2.0])
    base = key_of(lambda x: np.sum((x - c) ** 2), np.zeros(2))
    assert base != key_of(lambda x: np.sum((x - np.array([1.0, 2.5])) ** 2), np.zeros(2))   # bytes
    assert base != key_of(lambda x: np.sum((x - c.astype(np.float32)) ** 2), np.zeros(2))   # dtype
    assert base != key_of(lambda x: np.sum((x - c) ** 3), np.zeros(2))                      # a number
    assert base != key_of(lambda x: np.sum((c - x) ** 2), np.zeros(2))                      # the order
    assert base != key_of(lambda x: np.sum(np.abs(x - c) ** 2), np.zeros(2))                # an op
    assert base != key_of(lambda x: np.sum((x - c) ** 2), np.zeros(3)[:2].copy().reshape(1, 2))  # a shape
    assert key_of(lambda x: x[0] * 0.0, np.zeros(2)) != key_of(lambda x: x[0] * -0.0, np.zeros(2))  # bits


def test_unchanged_sees_a_constant_changed_in_place():
    c = np.array([1.0, 2.0])
    _, constants = content_key(trace(lambda x: np.sum((x - c) ** 2), np.zeros(2)))
    assert [array for array, _ in constants] == [c] and unchanged(constants)
    c[1] = 3.0
    assert not unchanged(constants)


def test_what_a_key_could_not_vouch_for_has_none():
    assert key_of(lambda x: x[0] if x[1] > 0 else x[1], np.ones(2)) is None              # a branch
    v = ad.Variable(np.ones(2))
    assert content_key(trace(lambda x: np.sum(x * v), np.ones(2))) is None              # a Variable
    factor = [2.0]
    twice = ad.extend.primitive(lambda x: 2.0 * x, "twice")
    ad.extend.defvjp(twice, lambda g, ans, x: g * factor[0])                             # a rule of the user's
    assert not twice.engine and all(p.engine for p in (ad.numpy.ops.sin, ad.numpy.ops.multiply))
    assert key_of(lambda x: np.sum(twice(x)), np.ones(2)) is None
    big = np.ones(MAX_BYTES // 8 + 1)
    assert key_of(lambda x: np.sum(x * big[:2]) + np.sum(big) * x[0], np.ones(2)) is not None  # sum(big): a number
    assert key_of(lambda x: np.sum(x[0] * big), np.ones(2)) is None                       # above MAX_BYTES
