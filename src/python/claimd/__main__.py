"""python3 -m claimd MODULE:FUNCTION: serve claimd's pipe: items with that function."""

from .handler import main

main()
