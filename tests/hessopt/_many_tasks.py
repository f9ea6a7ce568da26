"""Objectives for tests/hessopt/test_many.py, at module level in an importable module so that process
and Dask workers can unpickle them (pytest puts this folder on sys.path; workers inherit it)."""
import numpy as np


def shifted_sphere(x):
    return np.sum((x - 3.0) ** 2)
