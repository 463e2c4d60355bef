"""`huddle export`: one session as a file to send (HTML, Markdown or JSON), redacted."""

from __future__ import annotations

import os
import sys

import click

from huddle.views.export import FORMATS, MAX_OUTPUT


@click.command("export")
@click.argument("session_id")
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="html", show_default=True, help="The file's kind.")
@click.option("-o", "--output", default="-", metavar="FILE", help="Where to write it (default: standard output).")
@click.option(
    "--redact/--no-redact",
    default=True,
    show_default=True,
    help="Replace secrets (keys, tokens, passwords) in every text before it is written.",
)
@click.option(
    "--redact-file",
    "redact_files",
    multiple=True,
    type=click.Path(dir_okay=False),
    help="Your own patterns, one regular expression per line (repeatable).",
)
@click.option(
    "--images/--no-images", default=True, show_default=True, help="Keep the images of prompts and tool results."
)
@click.option(
    "--max-output",
    type=click.IntRange(200, 50_000_000),
    default=MAX_OUTPUT,
    show_default=True,
    help="Characters kept of one heavy tool output (the full size is stated).",
)
def export(session_id, fmt, output, redact, redact_files, images, max_output) -> None:
    """Write one session to a file: a self-contained HTML page (opens from disk, no
    network), Markdown with sub-agents inlined, or the data as JSON."""
    from huddle.core.single import one_session_core
    from huddle.errors import HuddleError
    from huddle.io import private
    from huddle.io.visible import visible
    from huddle.redact.redactor import RedactFileError, user_patterns
    from huddle.views.export import Options, export_data, render, summary_line

    try:
        patterns = [p for f in redact_files for p in user_patterns(f)]
    except RedactFileError as exc:
        raise click.ClickException(str(exc)) from None
    if redact_files and not redact:
        raise click.ClickException("--redact-file needs redaction on (drop --no-redact)")
    h = one_session_core(session_id)
    for note in h.notes:
        click.echo(f"huddle: {visible(note)}", err=True)
    try:
        data, _ = export_data(
            h, session_id, Options(redact=redact, patterns=patterns, images=images, max_output=max_output)
        )
    except HuddleError as exc:
        raise click.ClickException(str(exc)) from None
    blob = render(data, fmt)
    if output == "-":
        sys.stdout.buffer.write(blob)
        sys.stdout.flush()
        where = "standard output"
    else:
        tmp = f"{output}.{os.getpid()}.tmp"
        try:
            with private.opened(tmp, "wb") as f:  # the user's alone, whatever the umask
                f.write(blob)
            os.replace(tmp, output)
        except OSError as exc:
            raise click.ClickException(f"cannot write {output}: {exc.strerror or exc}") from None
        where = output
    click.echo(visible(f"huddle: wrote {where} ({len(blob) / 1e6:.1f} MB, {fmt}): {summary_line(data)}"), err=True)


COMMANDS = [export]
