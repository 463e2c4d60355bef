"""`huddle voices`, `huddle say`, `huddle translate`: the opt-in extras from the terminal.

Nothing here runs a model or downloads anything unasked: `voices on` shows what Kokoro's
files weigh and asks before fetching them; `translate LANG` only saves the setting.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile

import click

from huddle import optin
from huddle.errors import HuddleError
from huddle.oneshot import say_json

PLAYERS: tuple[tuple[str, list[str]], ...] = (("pw-play", []), ("paplay", []), ("aplay", ["-q"]), ("afplay", []))


def _home() -> str:
    from huddle.io.folders import huddle_home

    return huddle_home()


def _voices_state(home: str) -> dict:
    from huddle.voice import models

    o = optin.load(home)
    kept = models.installed(home)
    return {
        "on": o.voices,
        "engine": o.engine or ("kokoro" if kept else "espeak"),
        "muted": o.muted,
        "muted_sessions": o.muted_sessions,
        "kokoro": {
            "installed": kept is not None,
            "folder": models.folder(home),
            "files": [{"name": f.name, "bytes": f.size, "sha256": f.sha256} for f in models.KOKORO],
        },
        "espeak": shutil.which("espeak-ng") is not None,
    }


def _turn_on(home: str, engine: str, yes: bool) -> str:
    """Voices on: Kokoro's files fetched if wanted and confirmed; the engine in use."""
    from huddle.voice import models

    if engine == "espeak":
        return "espeak"
    todo = models.missing(home)
    if not todo:
        return "kokoro"
    total = sum(f.size for f in todo)
    click.echo(f"Kokoro-82M voices need {len(todo)} file(s), {models.mb(total)} in all:")
    for f in todo:
        click.echo(f"  {f.name}  {models.mb(f.size)}  sha256 {f.sha256[:16]}…")
    click.echo(f"from {os.environ.get('HUDDLE_KOKORO_MIRROR') or models.RELEASE}")
    click.echo(f"into {models.folder(home)}")
    if not (yes or click.confirm("Download them now?", default=False)):
        if engine == "kokoro":
            raise click.ClickException("Kokoro's files are not here: voices stay off")
        click.echo("Not downloaded: voices use espeak-ng (no download).")
        return "espeak"

    def progress(f: models.ModelFile, got: int) -> None:
        if got == f.size or got % (8 << 20) < models.CHUNK:
            click.echo(f"\r  {f.name}: {models.mb(got)} of {models.mb(f.size)}", nl=got == f.size)

    try:
        models.download(home, progress=progress)
    except models.DownloadError as exc:
        raise click.ClickException(f"download failed: {exc}") from None
    click.echo("Checked (SHA-256) and kept.")
    return "kokoro"


@click.command()
@click.argument(
    "action", required=False, type=click.Choice(["on", "off", "mute", "unmute", "status"]), default="status"
)
@click.argument("session_id", required=False)
@click.option("--engine", type=click.Choice(["espeak", "kokoro"]), default=None, help="The voice engine to use.")
@click.option("--yes", is_flag=True, help="With `on`: download Kokoro's files without asking.")
@click.option("--delete", is_flag=True, help="With `off`: delete Kokoro's downloaded files too.")
@click.option("--json", "as_json", is_flag=True, help="Print the state as JSON.")
def voices(action: str, session_id: str | None, engine: str | None, yes: bool, delete: bool, as_json: bool) -> None:
    """Voices for the call (opt-in): `on` (asks before downloading Kokoro's model,
    sizes shown; espeak-ng needs no download), `off`, `mute [ID]`, `unmute [ID]`."""
    home = _home()
    o = optin.load(home)
    if action == "on":
        o.engine = _turn_on(home, engine or "", yes) if engine != "espeak" else "espeak"
        o.voices = True
        optin.save(o, home)
        click.echo(f"Voices on ({o.engine}): open a session's call and press Listen.")
    elif action == "off":
        o.voices = False
        optin.save(o, home)
        if delete:
            from huddle.voice import models

            click.echo(f"Deleted {models.mb(models.remove(home))} of model files.")
        click.echo("Voices off.")
    elif action in ("mute", "unmute"):
        if session_id:
            kept = [s for s in o.muted_sessions if s != session_id]
            o.muted_sessions = kept + [session_id] if action == "mute" else kept
        else:
            o.muted = action == "mute"
        optin.save(o, home)
        click.echo(f"{'Muted' if action == 'mute' else 'Unmuted'}: {session_id or 'every session'}.")
    state = _voices_state(home)
    if as_json:
        say_json(state)
    elif action == "status":
        k = state["kokoro"]
        click.echo(
            f"voices {'on' if state['on'] else 'off'} · engine {state['engine']}"
            + (" · muted" if state["muted"] else "")
        )
        click.echo(f"kokoro: {'downloaded' if k['installed'] else 'not downloaded'} ({k['folder']})")
        click.echo(f"espeak-ng: {'installed' if state['espeak'] else 'not installed'}")


def _play(wav: bytes) -> None:
    for name, args in PLAYERS:
        path = shutil.which(name)
        if not path:
            continue
        with tempfile.NamedTemporaryFile(suffix=".wav") as f:
            f.write(wav)
            f.flush()
            if subprocess.run([path, *args, f.name], check=False).returncode == 0:
                return
    raise click.ClickException("no audio player here (pw-play, paplay, aplay, afplay): use --to FILE.wav")


@click.command()
@click.argument("session_id")
@click.option(
    "--to", "to", default=None, metavar="FILE.wav", help="Write the audio to this file instead of playing it."
)
@click.option(
    "--engine", type=click.Choice(["espeak", "kokoro"]), default=None, help="The voice engine (default: the best here)."
)
def say(session_id: str, to: str | None, engine: str | None) -> None:
    """Speak a session's latest line (what its call would say: "needs you: why" first)."""
    from huddle.core.single import one_session_core
    from huddle.views import api
    from huddle.voice.lines import Cast, latest_line
    from huddle.voice.speaker import Line, Speaker, WorkerError

    h = one_session_core(session_id)
    try:
        d = api.session_detail(h, session_id)
        sid = str(d["id"])
        back = int(d.get("last_seq", 0)) - 400  # (the latest line is among the last few hundred events)
        evs = api.events(h, sid, after=max(back, -1), limit=500)["events"]
    except HuddleError as exc:
        raise click.ClickException(str(exc)) from None
    tree = d.get("tree") or []
    lead = str(d.get("lead") or sid)
    cast = Cast(lead, [str(a["id"]) for a in tree if a.get("id")])
    names = {str(a["id"]): str(a.get("label") or "") for a in tree if a.get("id")}
    if d.get("state") == "needs_you" and d.get("waiting_for"):
        line: Line | None = Line(f"Needs you: {d['waiting_for']}", sid, lead, 0, urgent=True)
    else:
        line = latest_line(evs, sid, lead, cast, names)
    if line is None:
        raise click.ClickException("nothing to say: this session has no words from its lead or a report yet")
    o = optin.load(_home())
    sp = Speaker(engine if engine is not None else o.engine)
    try:
        clip = sp.speak(line)
    except (WorkerError, ValueError) as exc:
        raise click.ClickException(str(exc)) from None
    finally:
        sp.close()
    click.echo(f"{clip.engine} ({clip.voice}): {line.text}", err=True)
    if to:
        with open(to, "wb") as f:
            f.write(clip.wav())
        click.echo(f"wrote {to} ({clip.duration:.1f} s)", err=True)
    else:
        _play(clip.wav())


@click.command()
@click.argument("lang", required=False)
@click.option("--via", type=click.Choice(["claude", "api"]), default=None, help="Your own `claude` CLI, or an API key.")
@click.option("--model", default=None, help="The model to ask (default: a small one).")
@click.option("--json", "as_json", is_flag=True, help="Print the setting as JSON.")
def translate(lang: str | None, via: str | None, model: str | None, as_json: bool) -> None:
    """Show the conversation, call and notifications in LANG (`off` to stop). Off by
    default: strings go to your own `claude` CLI (or, with --via api, to the API with
    the key in HUDDLE_TRANSLATE_API_KEY, never stored), each once (cached)."""
    home = _home()
    o = optin.load(home)
    if lang is not None:
        if lang.lower() in ("off", "none"):
            o.translate = ""
        else:
            try:
                o.translate = optin.check_lang(lang)
            except ValueError as exc:
                raise click.BadParameter(str(exc), param_hint="LANG") from None
    if via is not None:
        o.translate_via = via
    if model is not None:
        o.translate_model = model
    if lang is not None or via is not None or model is not None:
        optin.save(o, home)
    state = {"lang": o.translate or None, "via": o.translate_via, "model": o.translate_model or None}
    if as_json:
        say_json(state)
        return
    if not o.translate:
        click.echo("translation off")
        return
    click.echo(
        f"translation to {o.translate} via {o.translate_via}" + (f" ({o.translate_model})" if o.translate_model else "")
    )
    if o.translate_via == "api":
        from huddle.translate.api import KEY_ENV, has_key

        click.echo(f"API key: {'set' if has_key() else 'not set'} ({KEY_ENV}; never stored by huddle)")


COMMANDS = [voices, say, translate]
