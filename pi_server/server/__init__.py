"""The face: JSON-RPC methods over the core, LSP document features, file watching."""
