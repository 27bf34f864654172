"""Which packages the distribution holds; everything else is in pyproject.toml.

``lint_rules/`` and ``codemods/`` stay at the top of the repository but ship inside the
``pinfix`` namespace (``pinfix.lint_rules``, ``pinfix.codemods``), so that a user's own
``codemods`` or ``lint_rules`` package can never shadow them (nor they the user's).
"""

from setuptools import find_packages, setup

FRONT_ENDS = {"pinfix.lint_rules": "lint_rules", "pinfix.codemods": "codemods"}

setup(
    packages=find_packages(include=["pinfix", "pinfix.*"]) + list(FRONT_ENDS),
    package_dir=FRONT_ENDS,
)
