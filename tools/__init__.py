"""Tools: the catalog the planner chooses from, the executor, the evidence schema."""
