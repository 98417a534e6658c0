"""Labeling many nodes from a planning sheet (MindCluster's CSV) and the LLD workbook.

- ``lld``: turn an Ascend LLD workbook into that CSV (``xlsx`` reads the workbook).
- ``apply``: plan, apply, delete and export against the cluster.

The CSV itself is read and validated by ``labeler.core.sheet``, which every reader of the
planning sheet shares.
"""
