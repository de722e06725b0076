"""Puts python/ (the glukit package, with glukit._C when built in place) first on sys.path."""
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
