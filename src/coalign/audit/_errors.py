"""The one error the audit raises: malformed evidence gets no report."""

from __future__ import annotations

from coalign.errors import DataError


class AuditError(DataError):
    """A contract or pair failed validation; the message names the record and the field.

    Raised instead of returning a report: the audit never summarizes evidence it could not
    reconstruct from concrete, canonical fields.
    """
