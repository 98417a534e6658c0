"""Labelling many nodes from a planning sheet (MindCluster's CSV) and the LLD workbook.

- ``sheet``: read and validate the CSV, every problem as file:line:column.
- ``lld``: turn an Ascend LLD workbook into that CSV.
- ``apply``: plan, apply, delete and export against the cluster.
"""
