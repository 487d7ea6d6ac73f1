from pi_server.cli import main

raise SystemExit(main())
