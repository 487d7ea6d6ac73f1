"""One module per group of methods; importing a module registers its methods in `server.rpc`
(`server/app.py` imports them all)."""
