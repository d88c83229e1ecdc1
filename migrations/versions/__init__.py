# A package so setuptools installs the revision files (Alembic itself skips this file).
