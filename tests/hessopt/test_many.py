"""hessopt.minimize_many: runs over no executor, a process pool and a Dask cluster."""
from concurrent.futures import ProcessPoolExecutor

import numpy as np
import pytest

import hessopt
from _many_tasks import shifted_sphere


def test_minimize_many_maps_runs_over_a_process_pool():
    starts = [np.full(3, float(k)) for k in range(4)]
    with ProcessPoolExecutor(2) as pool:
        results = hessopt.minimize_many(shifted_sphere, starts, method="trust-exact", executor=pool)
    assert len(results) == 4
    for result in results:
        np.testing.assert_allclose(result.x, 3.0 * np.ones(3), atol=1e-8)
    sequential = hessopt.minimize_many(shifted_sphere, starts, method="trust-exact")
    assert [r.nit for r in results] == [r.nit for r in sequential]


def test_minimize_many_runs_on_a_local_dask_cluster():
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster, distributed.Client(cluster) as client:
        results = hessopt.minimize_many(shifted_sphere, [np.zeros(2), np.ones(2)], method="newton",
                                        executor=client.get_executor())
    for result in results:
        np.testing.assert_allclose(result.x, 3.0 * np.ones(2), atol=1e-8)
