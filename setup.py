"""Stub: cffi can only hook into the build from setup.py (python-cffi/cffi#55).
Everything else lives in pyproject.toml."""
from setuptools import setup

setup(cffi_modules=["native/_build.py:ffibuilder"])
