import sys

from sparkxml.cli.main import main

sys.exit(main())
