"""The pure model and its rules: label keys and values, topologies and profiles, nodes,
the label plan, positions and their check, the planning sheet, node states and capacity.
Imports only :mod:`labeler.base`; no I/O beyond reading a named input file."""
