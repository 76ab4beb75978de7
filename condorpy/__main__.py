from condorpy.cli.main import main

raise SystemExit(main())
