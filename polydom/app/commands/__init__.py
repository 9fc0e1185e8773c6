"""The command line's verbs, one module each: ``add_<verb>(subparsers)`` registers the parser
and ``run_<verb>(args)`` does the work.

A verb module imports only the standard library and :mod:`polydom.app.arguments`,
:mod:`polydom.app.tables`, :mod:`polydom.curves.units`, :mod:`polydom.app.output` at its top;
numpy, storage, learners, scikit-learn, sympy and the like are imported inside ``run_<verb>``
(``tests/test_app/test_cli_imports.py`` checks which modules each verb loads).
"""
