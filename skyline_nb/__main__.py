from skyline_nb.cli import main

raise SystemExit(main())
