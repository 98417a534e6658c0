"""The topology map: nested domain boxes with node states, free capacity and a placement.

``model`` builds the map from the audit's facts and the simulator's nodes (pure);
``render`` writes it as one self-contained HTML page; ``advice`` draws ``advise``'s
placement over it and ``risk`` marks the domains where one node failure would evict a
Workload.
"""
