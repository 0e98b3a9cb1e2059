import sys

from cslint.cli import main

sys.exit(main())
