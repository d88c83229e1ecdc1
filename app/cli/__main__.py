"""`python -m app.cli`: what a service unit runs when zeroclaw was not started through its console script."""

from app.cli import main

main()
