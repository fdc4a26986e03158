"""Campaigns beyond one machine: ``kvmodel swarm`` on Dask distributed (``docs/swarm.md``).

* :mod:`kvmodel.swarm.tasks` — the tasks (pure descriptions), the distribution they are drawn
  from, and :func:`~kvmodel.swarm.tasks.run_task`, which runs one on a worker;
* :mod:`kvmodel.swarm.campaign` — the cluster (a ``LocalCluster`` or an existing scheduler), the
  real-part check on every worker, the sliding-window submission and what was rerun;
* :mod:`kvmodel.swarm.merge` — one report (JSON, text, JUnit, HTML) with one verdict;
* :mod:`kvmodel.swarm.command` — the command line.

Dask is an optional extra (``pip install -e ".[swarm]"``; the ``dev`` extra includes it): only
:mod:`~kvmodel.swarm.campaign` imports it, when a campaign starts.
"""
