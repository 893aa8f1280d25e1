"""Writes the secret scanner's recall corpus into a folder.

usage: scan_corpus.py OUTDIR [SEED]

The corpus holds the credential kinds of the leak corpus
(tests/integration/creds/test_leaks.sh: bearer tokens, a registry password,
an HS256 key, STS key ids, secret keys and session tokens, random JWTs, PEM
keys made by openssl) plus the token shapes the scanner knows, each written
into a file the way a project would commit it: as a literal assigned in
C, shell, Python, JavaScript, TypeScript, Go, Rust, Ruby, Lua, Java, PHP,
YAML, TOML, INI and JSON, as a .env file, as a key file; values with a
'$' or '%e' where nothing expands them, chosen passwords with punctuation,
credentials inside URLs. One planted
secret per file. Values are drawn from a seeded generator at run time;
none is written in this file.

OUTDIR/expected lists "PATH<TAB>RULE<TAB>LABEL" per planted file (the rule
the scanner must report for it; "-" for entries below the rule's 16
character floor, reported separately and not counted). OUTDIR/tree holds
the files, one folder each (NNN/...), to be scanned one by one.
"""
import base64
import os
import random
import subprocess
import sys
import urllib.parse

ALNUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
UPPER_DIGITS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
B64URL = ALNUM + "_-"


def main():
    out = sys.argv[1]
    rng = random.Random(int(sys.argv[2]) if len(sys.argv) > 2 else 10)
    tree = os.path.join(out, "tree")
    os.makedirs(tree, exist_ok=True)
    expected = []

    def rnd(n, alphabet=ALNUM):
        return "".join(rng.choice(alphabet) for _ in range(n))

    def put(rel, text, rule, label):
        # One folder per planted file: a scan stops at 100 findings.
        rel = "%03d/%s" % (len(expected), rel)
        path = os.path.join(tree, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(text)
        expected.append((rel, rule, label))

    def b64(raw):
        return base64.b64encode(raw).decode()

    def b64url(text):
        return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")

    def jwt():
        head = b64url('{"alg":"HS256","typ":"JWT"}')
        body = b64url('{"sub":"%s","iat":1767225600,"scope":"jobs"}' % rnd(12))
        return "%s.%s.%s" % (head, body, rnd(43, B64URL))

    # Literal assignments, one template per language: (file, text). NAME is
    # the credential's name in the language's usual case.
    def camel(name):
        parts = name.split("_")
        return parts[0] + "".join(p.title() for p in parts[1:])

    def templates(name):
        up, cm = name.upper(), camel(name)
        pascal = cm[0].upper() + cm[1:]
        return [
            ("c", "static const char %s[] = \"%%s\";\n" % name),
            ("h", "#define %s \"%%s\"\n" % up),
            ("sh", "export %s='%%s'\n" % up),
            ("py", "%s = \"%%s\"\n" % name),
            ("js", "const %s = \"%%s\";\n" % cm),
            ("ts", "export const %s: string = '%%s';\n" % cm),
            ("go", "var cfg = Config{\n\t%s: \"%%s\",\n}\n" % pascal),
            ("rs", "const %s: &str = \"%%s\";\n" % up),
            ("rb", "config.%s = '%%s'\n" % name),
            ("lua", "local %s = \"%%s\"\n" % name),
            ("java", "static final String %s = \"%%s\";\n" % up),
            ("php", "$%s = '%%s';\n" % name),
            ("yml", "service:\n  %s: \"%%s\"\n" % name),
            ("toml", "[service]\n%s = \"%%s\"\n" % name),
            ("ini", "[service]\n%s = %%s\n" % name),
            ("json", "{\"service\": {\"%s\": \"%%s\"}}\n" % name),
        ]

    # The leak corpus's loaded credentials, drawn again per language.
    kinds = [
        ("api_token", "bearer api",
         lambda: "%s+%s/%s" % (rnd(18), rnd(11), rnd(13))),
        ("access_token", "bearer tok100",
         lambda: rnd(100, ALNUM + "._~-")),
        ("auth_token", "bearer tok1000", lambda: rnd(1000)),
        ("registry_password", "basic registry password",
         lambda: "%s@:/%s" % (rnd(12), rnd(9))),
        ("slurm_jwt_secret", "hs256 slurm key", lambda: rnd(48)),
        ("session_token", "s3 sts SessionToken",
         lambda: b64(bytes(rng.getrandbits(8) for _ in range(150)))),
        ("client_secret", "bearer api base64",
         lambda: b64(("%s+%s/%s" % (rnd(18), rnd(11), rnd(13))).encode())),
        ("api_key", "bearer tok13 (below the floor)", lambda: rnd(13)),
        ("password", "bearer tok8 (below the floor)", lambda: rnd(8)),
    ]
    for name, label, draw in kinds:
        for ext, tmpl in templates(name):
            value = draw()
            rule = "secret-assignment" if len(value) >= 16 else "-"
            put("assign/%s.%s" % (name, ext), tmpl % value, rule,
                "%s as a %s literal" % (label, ext))

    # a. Values with a '$' or a '%e' inside, in languages and quotes where
    # nothing expands them; and mostly literal values around a small
    # expansion where something does.
    def mixed_tail(n):
        # Upper and lower case after the '$': no variable's name.
        return rng.choice("abcdefghjkmnpqrstuvwxyz") + \
            rng.choice("ABCDEFGHJKLMNPQRSTUVWXYZ") + rnd(n - 2)

    for ext, tmpl in (("py", "DB_PASSWORD = \"%s\"\n"),
                      ("yml", "db:\n  password: %s\n"),
                      ("json", "{\"password\": \"%s\"}\n"),
                      ("js", "const dbPassword = \"%s\";\n"),
                      ("sh", "export DB_PASSWORD='%s'\n")):
        value = rnd(8) + "$" + mixed_tail(10)
        put("interp/dollar.%s" % ext, tmpl % value, "secret-assignment",
            "'$' inside a %s literal that nothing expands" % ext)
    for ext, tmpl in (("yml", "password: \"%s\"\n"),
                      ("toml", "password = \"%s\"\n")):
        value = rnd(6) + "%e" + rnd(12)
        put("interp/percent.%s" % ext, tmpl % value, "secret-assignment",
            "'%%e' inside a %s literal" % ext)
    put("interp/.env", "DB_HOST=db\nDB_PASSWORD=%s$%s\n" % (
        rnd(4), mixed_tail(11)), "dotenv", "'$' inside a .env value")
    for ext, tmpl in (("sh", "TOKEN=\"$HOME/%s\"\n"),
                      ("py", "password = \"%%s%s\"\n"),
                      ("rb", "token = \"#{prefix}%s\"\n"),
                      ("kt", "val token = \"${prefix}%s\"\n")):
        put("interp/around.%s" % ext, tmpl % rnd(20), "secret-assignment",
            "long literal around an expansion in %s" % ext)

    # b. Chosen passwords: words, a year and punctuation.
    for ext, tmpl in (("yml", "password: %s\n"),
                      ("py", "password = \"%s\"\n"),
                      ("ini", "password = %s\n")):
        value = "%s%s%d%s" % (
            rng.choice(["Summer", "Welcome", "Autumn", "Winter"]),
            rng.choice(["Vacation", "Company", "Holidays", "Kingdom"]),
            rng.randrange(2015, 2031), rng.choice("!#?*&%@"))
        put("chosen/password.%s" % ext, tmpl % value, "secret-assignment",
            "chosen password in %s" % ext)

    # c. Credentials inside URLs: the userinfo's password, a credential
    # parameter of the query, a Slack webhook.
    for ext, tmpl in (("yml", "secret: %s\n"),
                      ("py", "DATABASE_URL = \"%s\"\n"),
                      ("sh", "psql '%s'\n"),
                      ("json", "{\"dsn\": \"%s\"}\n")):
        url = "%s://%s:%s@db%d.internal:5432/app" % (
            rng.choice(["postgres", "mysql", "mongodb+srv", "redis"]),
            rng.choice(["admin", "app", "root"]), rnd(12), rng.randrange(9))
        put("url/userinfo.%s" % ext, tmpl % url, "url-credentials",
            "password in a URL in %s" % ext)
    # Names that secret-assignment knows (token, api_key) are its own,
    # as in "?access_token=..." inside a string; url-credentials reads
    # the others.
    for name, rule in (("sig", "url-credentials"),
                       ("key", "url-credentials"),
                       ("signature", "url-credentials"),
                       ("token", "secret-assignment"),
                       ("api_key", "secret-assignment")):
        put("url/query-%s.md" % name,
            "curl 'https://api.test/v1/x?page=2&%s=%s'\n" % (name, rnd(32)),
            rule, "%s= in a URL's query" % name)
    for ext, tmpl in (("js", "const hook = \"%s\";\n"),
                      ("yml", "webhook: %s\n")):
        put("url/slack.%s" % ext, tmpl % (
            "https://hooks.slack.com/services/T%s/B%s/%s" % (
                rnd(8, UPPER_DIGITS), rnd(8, UPPER_DIGITS), rnd(24))),
            "slack-webhook", "Slack webhook in %s" % ext)

    # Shapes the scanner knows by their form.
    for ext, line in (("ini", "aws_access_key_id = %s\n"),
                      ("json", "{\"AccessKeyId\": \"%s\"}\n"),
                      ("py", "KEY_ID = \"%s\"\n")):
        for prefix in ("AKIA", "ASIA"):
            put("aws/%s-id.%s" % (prefix.lower(), ext),
                line % (prefix + rnd(16, UPPER_DIGITS)),
                "aws-access-key-id", "%s key id in %s" % (prefix, ext))
    for ext, line in (("ini", "aws_secret_access_key=%s\n"),
                      ("cfg", "aws_secret_access_key = %s\n"),
                      ("json", "{\"SecretAccessKey\": \"%s\"}\n")):
        put("aws/secret.%s" % ext, line % rnd(40, ALNUM + "/+"),
            "aws-secret-access-key", "secret access key in %s" % ext)
    session = b64(bytes(rng.getrandbits(8) for _ in range(120)))
    key_id = "ASIA" + rnd(16, UPPER_DIGITS)
    put("aws/presigned.txt",
        "https://bucket.s3.eu-west-1.amazonaws.com/data/in.bin"
        "?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=%s"
        "%%2F20250101%%2Feu-west-1%%2Fs3%%2Faws4_request"
        "&X-Amz-Security-Token=%s&X-Amz-Signature=%s\n"
        % (key_id, urllib.parse.quote(session, safe=""), rnd(64, "0123456789abcdef")),
        "aws-access-key-id", "presigned URL")
    for i in range(3):
        put("jwt/token%d.sh" % i, "token=%s\n" % jwt(), "jwt",
            "random JWT %d" % i)
    put("jwt/header.http", "Authorization: Bearer %s\n" % jwt(), "jwt",
        "JWT in an Authorization header")
    shapes = [
        ("github.sh", "export GH_TOKEN=ghp_%s\n" % rnd(36), "github-token"),
        ("github_pat.yml", "token: github_pat_%s_%s\n" % (rnd(22), rnd(59)),
         "github-token"),
        ("gitlab.txt", "glpat-%s\n" % rnd(20, B64URL), "gitlab-token"),
        ("slack.js", "const hook = \"xoxb-%s-%s\";\n" % (
            rnd(10, "0123456789"), rnd(24)), "slack-token"),
        ("google.xml", "<key>AIza%s</key>\n" % rnd(35, B64URL),
         "google-api-key"),
        ("stripe.rb", "Stripe.key = 'sk_live_%s'\n" % rnd(24), "stripe-key"),
    ]
    for rel, text, rule in shapes:
        put("shapes/" + rel, text, rule, rule)
    put(".env", "DB_HOST=localhost\nAPI_TOKEN=%s\n" % rnd(32), "dotenv",
        ".env file")
    put("deploy/.env.production", "export STRIPE=%s\n" % rnd(24), "dotenv",
        ".env.production file")

    # PEM keys made by openssl, as files and inside code.
    keys = []
    for args in (["genpkey", "-algorithm", "ed25519"],
                 ["genpkey", "-algorithm", "rsa", "-pkeyopt",
                  "rsa_keygen_bits:2048"],
                 ["genpkey", "-algorithm", "EC", "-pkeyopt",
                  "ec_paramgen_curve:P-256"]):
        try:
            keys.append(subprocess.run(["openssl"] + args, check=True,
                                       capture_output=True,
                                       text=True).stdout)
        except (OSError, subprocess.CalledProcessError):
            print("scan_corpus: no openssl, no PEM keys", file=sys.stderr)
            break
    if keys:
        put("keys/signer.pem", keys[0], "private-key", "ed25519 PEM file")
        put("keys/deploy_key", keys[1], "private-key", "RSA PEM, no extension")
        put("keys/id_ed25519", keys[0], "private-key", "key-named file")
        put("keys/ec.key", keys[2], "private-key", "EC PEM .key file")
        put("keys/embedded.py",
            "KEY = \"%s\"\n" % keys[1].replace("\n", "\\n"), "private-key",
            "RSA PEM in a Python string")
        put("keys/tls.yml", "tls:\n  key: |\n" + "".join(
            "    " + line + "\n" for line in keys[2].splitlines()),
            "private-key", "EC PEM in a YAML block")

    with open(os.path.join(out, "expected"), "w") as f:
        for rel, rule, label in expected:
            f.write("%s\t%s\t%s\n" % (rel, rule, label))


main()
