"""``python -m invariants.simulate OUTDIR``: regenerate the sample logs."""

import sys

from invariants.simulate.samples import main

sys.exit(main())
