"""huddle's local web server: the JSON API, the live stream and the pages."""

from .app import create_app
from .running import ServerThread, bind, make_server, url_for

__all__ = ["ServerThread", "bind", "create_app", "make_server", "url_for"]
