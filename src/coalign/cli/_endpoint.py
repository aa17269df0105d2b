"""``--timeout``, ``--retries`` and ``--concurrency``: how the commands that call models reach
endpoint (``openai:``) models. Declared once here so every command spells them alike."""

from __future__ import annotations

import typer

from coalign.lm import EndpointSettings

TIMEOUT = typer.Option(None, "--timeout", help="seconds one endpoint request may take in "
                       "all, body included (openai: models; default 60)")
RETRIES = typer.Option(None, "--retries", help="retries of a failed endpoint request "
                       "(default 4)")
CONCURRENCY = typer.Option(None, "--concurrency", help="endpoint requests in flight at once "
                           "(default: no cap)")


def endpoint_settings(timeout: float | None, retries: int | None, concurrency: int | None,
                      base: EndpointSettings | None = None) -> EndpointSettings:
    """The options given on the command line over ``base`` (e.g. a run config's block)."""
    base = base or EndpointSettings()
    return EndpointSettings(
        timeout_s=base.timeout_s if timeout is None else timeout,
        max_retries=base.max_retries if retries is None else retries,
        concurrency=base.concurrency if concurrency is None else concurrency,
    )

RAY = typer.Option(None, "--ray", metavar="ADDRESS", help="run model calls on Ray actors of "
                   "the cluster at ADDRESS: auto, HOST:6379, ray://HOST:10001, or local to "
                   "start one here (needs the ray extra; docs/ray.md)")
