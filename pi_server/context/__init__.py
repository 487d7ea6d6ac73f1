"""Runtime messages: pi's buildSessionContext over a path of the tree."""
