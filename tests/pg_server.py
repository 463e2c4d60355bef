"""A real PostgreSQL for the hub tests: Debian's server binaries, `initdb` in a temp
folder, listening on 127.0.0.1 on a free port, password authentication (scram), stopped
at the end. As root (CI), the server runs as the `postgres` user the package created."""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile

USER = "huddle"
PASSWORD = "hub-test-pw-7f3a"


def bindir() -> str | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(p.split("/")[4]))
    return os.path.dirname(found[-1]) if found else None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Postgres:
    def __init__(self) -> None:
        b = bindir()
        if b is None:
            raise RuntimeError("PostgreSQL server binaries not found (apt-get install postgresql; scripts/test does)")
        self.bin = b
        self.root = tempfile.mkdtemp(prefix="huddle-pg-")
        self.data = os.path.join(self.root, "data")
        self.port = free_port()
        self.as_user: list[str] = []
        if os.geteuid() == 0:  # the server refuses to run as root
            pw = pwd.getpwnam("postgres")
            os.chown(self.root, pw.pw_uid, pw.pw_gid)
            self.as_user = ["runuser", "-u", "postgres", "--"]
        pwfile = os.path.join(self.root, "pw")
        with open(pwfile, "w") as f:
            f.write(PASSWORD + "\n")
        if self.as_user:
            os.chown(pwfile, pwd.getpwnam("postgres").pw_uid, -1)
        self._run(
            "initdb",
            "-D",
            self.data,
            "-U",
            USER,
            "--auth=scram-sha-256",
            f"--pwfile={pwfile}",
            "-E",
            "UTF8",
            "--no-sync",
        )
        os.unlink(pwfile)

    def _run(self, tool: str, *args: str) -> None:
        subprocess.run([*self.as_user, os.path.join(self.bin, tool), *args], check=True, capture_output=True)

    def start(self) -> Postgres:
        opts = f"-c listen_addresses=127.0.0.1 -c port={self.port} -c unix_socket_directories={self.root} -c fsync=off"
        self._run(
            "pg_ctl", "-D", self.data, "-o", opts, "-l", os.path.join(self.root, "log"), "-w", "-t", "60", "start"
        )
        return self

    def halt(self) -> None:
        """Stop the server, keeping its data (start() brings it back on the same port)."""
        self._run("pg_ctl", "-D", self.data, "-m", "fast", "-w", "stop")

    def stop(self) -> None:
        try:
            self._run("pg_ctl", "-D", self.data, "-m", "immediate", "-w", "stop")
        except subprocess.CalledProcessError:
            pass  # already stopped (a test halted it)
        finally:
            shutil.rmtree(self.root, ignore_errors=True)

    def dsn(self, dbname: str = "postgres", password: bool = True) -> str:
        pw = f"password={PASSWORD} " if password else ""
        return f"host=127.0.0.1 port={self.port} user={USER} {pw}dbname={dbname}"

    def url(self, dbname: str = "postgres") -> str:
        return f"postgresql://{USER}:{PASSWORD}@127.0.0.1:{self.port}/{dbname}"

    def create_db(self, name: str) -> str:
        import psycopg

        with psycopg.connect(self.dsn(), autocommit=True) as c:
            c.execute(f'CREATE DATABASE "{name}"')
        return name
