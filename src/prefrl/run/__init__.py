"""The application: a config becomes a run directory (``prefrl train``: config files and flags
resolved once, resume, run identity, metrics files, the report) and grids of runs on Ray
(``prefrl sweep``). Import the modules: :mod:`prefrl.run.config`, :mod:`prefrl.run.train`,
:mod:`prefrl.run.sweep`."""
