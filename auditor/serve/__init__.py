"""`ecarte-audit serve`: a local page to drop a carnet and read its report.

For inspectors who do not use a terminal. A Starlette application served by
uvicorn on 127.0.0.1 only: the page uploads carnets (or names a folder of
this machine for a batch), the audit runs through the same functions as the
command line (`auditor.run.run`), and
the page shows the very report.html the command line writes, with its
findings.json and annotated workbook to download.

- `security`: every request needs the token printed at start and a loopback
  Host header (no DNS rebinding); security headers on every answer.
- `uploads`: uploaded files → carnets in the private temporary folder; no
  uploaded name is ever used as a path, a hostile zip is an EC00-01.
- `runs`: one audit (one carnet or a batch) at a time, in a worker thread.
- `app`: the routes; `server`: sockets, browser, Ctrl-C, clean-up.
"""
