"""The one native piece: addressable/trace/_kineto.c, the trace loader's fast path. It is optional: where
it cannot be compiled, the package installs without it and trace.py parses with msgspec/orjson."""

from setuptools import Extension, setup

setup(ext_modules=[Extension("addressable.trace._kineto", ["addressable/trace/_kineto.c"], optional=True)])
