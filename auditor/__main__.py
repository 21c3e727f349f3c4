"""`python -m auditor`: the command line."""

from auditor.cli import main

raise SystemExit(main())
