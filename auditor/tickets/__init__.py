"""Tickets, in one package: the interval algebra on runs of numbers
(`intervals`), the ledger of one carnet's tickets (`ledger`) with its book
views (`books`). The ticket rules (`auditor/checks/tickets_*.py`), the
report's ticket section and the cross-carnet check read them; nothing here
imports checks or report."""
