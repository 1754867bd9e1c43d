"""Research code and oracles: paper reproductions that tests and benchmarks run, never compute.

Nothing that planning, emission or a computation reaches imports this package
(``tests/test_imports.py`` checks that). It may import the algebra and the optimizer
(``dask_tra.tra``, ``dask_tra.ia``, ``dask_tra.optimizer``), never the Dask layer.

- ``rules/`` — the IA rewrite rules of the TRA paper (Table 2, with the errata's corrected
  preconditions), one family per module, and a bottom-up driver (``rewrite_fixpoint``). The
  optimizer builds its plans by strategies (``optimizer/strategies.py``), not by these rules;
  the rules' property tests (``tests/test_rules.py``) check the equivalences those
  strategies rely on.
- ``eindecomp*.py`` — EinDecomp (Bourgeois et al., PVLDB 2025) over einsum graphs: partition
  vectors, the paper's cost functions as corrected by the errata, its dynamic programme and
  the brute-force, greedy and SQRT baselines, reproducing the paper's worked numbers
  (``tests/test_eindecomp.py``). The optimizer's own search over partition vectors is
  ``optimizer/search.py`` with the ``d=[...]`` strategies of ``optimizer/strategies.py``.
"""
