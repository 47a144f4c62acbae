"""Sphinx configuration: ``python -m sphinx -W -b html docs docs/_build/html`` builds the site."""
import glob
import importlib.util
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "_ext"))
# The kcodec documented is the checkout's when its extensions are built in place, else the
# installed one: a fresh clone's kcodec/ has no extensions, and autodoc imports them.
ROOT = os.path.dirname(HERE)
if glob.glob(os.path.join(ROOT, "kcodec", "_native", "*.so")):
    sys.path.insert(0, ROOT)
else:
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != ROOT]

import kcodec  # noqa: E402

project = "kcodec"
release = version = kcodec.__version__
copyright = "the kcodec authors"
extensions = ["myst_parser", "sphinx.ext.autodoc", "sphinx.ext.napoleon", "sphinx_copybutton",
              "kcodec_cli", "kcodec_tutorial"]
source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
myst_heading_anchors = 3
exclude_patterns = ["_build", "_generated"]
# furo: search, a page outline, dark mode, and code blocks that scroll; the copy button on
# every code block leaves out shell prompts and the output lines a block shows
html_theme = "furo"
html_title = f"kcodec {release}"
html_static_path = ["_static"]
html_css_files = ["kcodec.css"]
copybutton_exclude = ".linenos, .gp, .go"
autodoc_member_order = "bysource"
autodoc_typehints = "description"
# kcodec.spark's modules import pyspark; the reference builds without its 456 MB too
if importlib.util.find_spec("pyspark") is None:
    autodoc_mock_imports = ["pyspark"]
autodoc_default_options = {"members": True, "undoc-members": False, "show-inheritance": True}
napoleon_google_docstring = True
napoleon_numpy_docstring = False
nitpicky = False
