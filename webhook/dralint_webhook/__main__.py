"""``python -m dralint_webhook`` is the ``dralint-webhook`` command."""
import sys

from .cli import main

sys.exit(main())
