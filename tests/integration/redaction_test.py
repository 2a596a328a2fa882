#!/usr/bin/env python3
"""Secrets on the job's command line never reach a file we write (collector/redact.h): the
trace DB, the raw record files (`record --keep-raw`), and tune's tuned.toml and trials JSON.
One job carries every form: `--api-key=X`, `--token X`, a URL password, Hydra overrides
(`db.password=X`, `+wandb.api_key=<40 hex>`), a query parameter and JSON in argv. Each
secret is looked for as bytes in every file; the arguments around them must stay.

usage: redaction_test.py TRACETUNE CASE   (CASE: record | tune)
"""
import pathlib
import subprocess
import sys
import tempfile

TRACETUNE = sys.argv[1]
CASE = sys.argv[2]
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))  # tests/harness.py
from harness import check, run_cases  # noqa: E402

SECRETS = {
    "--api-key=": "sk-live-7Hq2",
    "--token": "tok-Zb81x",
    "URL password": "urlpass-Qw3",
    "db.password=": "hunter2-Hy",
    "+wandb.api_key=": "0123456789abcdef0123456789abcdef01234567",
    "?token=": "qtok-Kd55",
    "JSON": "json-sec-Pq9",
}
# steps come from tracetune.step(), so that tune has something to measure
PROGRAM = "import tracetune, time\nfor i in range(12): tracetune.step(); time.sleep(0.005)"
JOB = ["/usr/bin/python3", "-c", PROGRAM, f"--api-key={SECRETS['--api-key=']}", "--token", SECRETS["--token"],
       f"--db=postgres://alice:{SECRETS['URL password']}@db.internal/x", f"db.password={SECRETS['db.password=']}",
       f"+wandb.api_key={SECRETS['+wandb.api_key=']}", f"https://hub.example/x?token={SECRETS['?token=']}&rev=main",
       '{"lr": 0.1, "api_key": "%s"}' % SECRETS["JSON"], "--epochs", "2"]
KEPT = [b"--epochs", b"db.password=", b"+wandb.api_key=", b"db.internal", b"rev=main", b'"lr"']


def check_files(what, files):
    blobs = {f: f.read_bytes() for f in files if f.is_file()}
    check(f"{what}: files written", len(blobs) > 0, [str(f) for f in files])
    for form, secret in SECRETS.items():
        leaks = [str(f) for f, b in blobs.items() if secret.encode() in b]
        check(f"{what}: the {form} secret is in no file", not leaks, leaks)
    return blobs


def case_record(tmp):
    tmp = pathlib.Path(tmp)
    r = subprocess.run([TRACETUNE, "record", "--keep-raw", "-o", str(tmp / "t.db"), "--", *JOB], capture_output=True,
                       text=True, timeout=120)
    check("record exits 0", r.returncode == 0, r.stderr[-2000:])
    blobs = check_files("record", [tmp / "t.db", *sorted((tmp / "t.db.raw").rglob("*.ttr"))])
    db = blobs.get(tmp / "t.db", b"")
    for word in KEPT:
        check(f"record: {word!r} is kept in the trace", word in db)


def case_tune(tmp):
    tmp = pathlib.Path(tmp)
    r = subprocess.run([TRACETUNE, "tune", "--steps", "6", "--warmup", "1", "--max-trials", "2", "--confirm", "0",
                        "--trial-timeout", "60", "-o", str(tmp / "t.toml"), "--", *JOB], capture_output=True, text=True,
                       cwd=tmp, timeout=300)
    check("tune exits 0", r.returncode == 0, r.stderr[-2000:])
    blobs = check_files("tune", [tmp / "t.toml", tmp / "t.trials.json"])
    for word in KEPT:
        check(f"tune: {word!r} is kept in tuned.toml", word.replace(b'"', b'\\"') in blobs.get(tmp / "t.toml", b"")
              or word in blobs.get(tmp / "t.toml", b""))


run_cases({"record": case_record, "tune": case_tune}, {CASE})
