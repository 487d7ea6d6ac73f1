"""The tree: paths, children order, labels, common ancestors, and pi's /tree rows."""
