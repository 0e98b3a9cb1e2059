import sys

from cslint.launch import main

sys.exit(main())
