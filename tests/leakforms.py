"""Secret, signed-URL and host-path forms planted in runs to prove bundles never leak them.

Every form carries the substrings that must not survive (``secrets``). The values are synthetic and
unique, so a survivor is found by a plain byte search of every bundle file, zip member and command
output. The first forms are the ones a bundle once leaked through escaped report text, embedded
strings and its own manifest; the rest widen the net to other real-world shapes.
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass

from worldforge.evidence.corpus import measure


@dataclass(frozen=True)
class Form:
    id: str
    text: str
    secrets: tuple[str, ...]


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYz9q8Lk3Jw2"
FORMS: tuple[Form, ...] = (
    # --- once leaked through HTML/CSV escaping of report text
    Form("aws-secret-key", f"aws_secret_access_key = {AWS_SECRET}", (AWS_SECRET,)),
    Form("json-api-key", '{"api_key": "ak-7Hq2ZP9wLm4Rt8Vx"}', ("ak-7Hq2ZP9wLm4Rt8Vx",)),
    Form("json-password", '{"password": "Pw-3kd9Q!x7Lm"}', ("Pw-3kd9Q!x7Lm",)),
    Form("json-client-secret", '{"client_secret": "cs-91aa7dFq2Kp0"}', ("cs-91aa7dFq2Kp0",)),
    Form("json-private-key", '{"private_key": "pk-55ZZqv0r7Wmn"}', ("pk-55ZZqv0r7Wmn",)),
    Form("json-credentials", '{"credentials": "cr-19Xk2LpQ7vTz"}', ("cr-19Xk2LpQ7vTz",)),
    Form(
        "azure-sas",
        "https://acct.blob.core.windows.net/c/b.bin?sv=2022-11-02&se=2031-01-01T00%3A00%3A00Z"
        "&sr=b&sp=r&sig=Q2h7xY9pLm4Nq8Rt3Vw6Zb1Kc5Df0Gh%3D",
        ("Q2h7xY9pLm4Nq8Rt3Vw6Zb1Kc5Df0Gh", "2031-01-01T00%3A00%3A00Z"),
    ),
    Form("key-query", "https://maps.example.test/api?center=1,2&key=kq-8Jd2Lq0Zr5Tx", ("kq-8Jd2Lq0Zr5Tx",)),
    # --- once leaked from strings inside item records and report.json
    Form("ini-token", "[auth]\ntoken = ini-tok-4Fj8Kq2Wz\nretries = 3", ("ini-tok-4Fj8Kq2Wz",)),
    Form("cookie-header", "Cookie: sid=ck-77Hs2Kd9Qp; theme=dark", ("ck-77Hs2Kd9Qp",)),
    Form(
        "credentials-block",
        'credentials: {"user": "svc-reader", "pw": "blk-5Tq8Wz1Xc"}',
        ("blk-5Tq8Wz1Xc",),
    ),
    # --- once leaked into the bundle's own manifest
    Form("bearer-header", "Authorization: Bearer br-2Lx9Qw7Zt4Kp8Ns6", ("br-2Lx9Qw7Zt4Kp8Ns6",)),
    Form("home-path", "/home/qa-dana/projects/wf/cache.json", ("qa-dana",)),
    # --- the forms the redactor must also know
    Form("name-value", '{"name": "OPENAI_API_KEY", "value": "nv-3Kp9Lq2Zx7"}', ("nv-3Kp9Lq2Zx7",)),
    Form("csv-row", "setting,value\napi_key,csv-8Hd3Kq1Zt\n", ("csv-8Hd3Kq1Zt",)),
    Form("md-table", "| key | value |\n| --- | --- |\n| token | mdt-6Yw2Qp9Lx |\n", ("mdt-6Yw2Qp9Lx",)),
    Form("md-emphasis", "**password**: mde-4Rt7Kx2Wq", ("mde-4Rt7Kx2Wq",)),
    Form("html-input", '<input type="password" name="password" value="hin-9Qw2Lx5Kd">', ("hin-9Qw2Lx5Kd",)),
    Form("cli-password", "mysqldump --password cli-7Ks2Qx9Lw db", ("cli-7Ks2Qx9Lw",)),
    Form("cli-token-eq", "tool --api-token=clt-3Hq8Wz5Kx run", ("clt-3Hq8Wz5Kx",)),
    Form("curl-user", "curl -u deploy:cu-6Lp2Qz8Wk https://api.example.test/", ("cu-6Lp2Qz8Wk",)),
    Form("yaml-block", "token: |\n  yb-1Qz7Lk3Wx\n  yb-2Rt5Kp8Zm\nnext: 1", ("yb-1Qz7Lk3Wx", "yb-2Rt5Kp8Zm")),
    Form("yaml-folded", "client_secret: >-\n  yf-8Kd2Lq5Wz\nother: x", ("yf-8Kd2Lq5Wz",)),
    Form(
        "nested-credentials",
        '{"credentials": {"user": "nc-user-x1", "pw": "nc-pw-7Hq2Kx"}}',
        ("nc-pw-7Hq2Kx", "nc-user-x1"),
    ),
    Form(
        "proxy-authorization",
        "Proxy-Authorization: Basic " + _b64("proxy:pa-5Kq2Lx8W"),
        (_b64("proxy:pa-5Kq2Lx8W"),),
    ),
    Form("set-cookie", "Set-Cookie: session=sc-9Lq3Zx7Kw; HttpOnly", ("sc-9Lq3Zx7Kw",)),
    Form("x-api-key", "X-Api-Key: xak-2Wq8Lz5Kp1", ("xak-2Wq8Lz5Kp1",)),
    Form("dotenv-export", "export DATABASE_PASSWORD=env-6Kx2Qw9Lz", ("env-6Kx2Qw9Lz",)),
    Form("toml-secret", 'secret_key = "toml-3Lp8Kq2Zw"', ("toml-3Lp8Kq2Zw",)),
    Form("url-userinfo", "postgres://app:ui-7Zq2Kx5Lw@db.internal:5432/app", ("ui-7Zq2Kx5Lw",)),
    Form(
        "s3-presigned",
        "https://b.s3.amazonaws.com/k?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIAIOSFODNN7EXAMPLE"
        "%2F20310101%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-Signature=fe5f80f77d5fa3beca038a248ff027d0445342fe",
        ("fe5f80f77d5fa3beca038a248ff027d0445342fe", "AKIAIOSFODNN7EXAMPLE"),
    ),
    Form(
        "gcs-signed",
        "https://storage.googleapis.com/b/o?X-Goog-Algorithm=GOOG4-RSA-SHA256&X-Goog-Signature=9a1bcd77e0ff12aa",
        ("9a1bcd77e0ff12aa",),
    ),
    Form(
        "github-token",
        "push with ghp_Wq2Lx8Kz5Hp1Rt7Ys3Vb9Nc4Md6Fg0Jk2Lq",
        ("ghp_Wq2Lx8Kz5Hp1Rt7Ys3Vb9Nc4Md6Fg0Jk2Lq",),
    ),
    Form(
        "openai-proj",
        "key sk-proj-Qw2Lx8Kz5Hp1Rt7Ys3Vb9Nc4Md6Fg0",
        ("sk-proj-Qw2Lx8Kz5Hp1Rt7Ys3Vb9Nc4Md6Fg0",),
    ),
    Form(
        "anthropic", "sk-ant-api03-Zx8Kq2Lw5Hp1Rt7Ys3Vb9Nc4Md", ("sk-ant-api03-Zx8Kq2Lw5Hp1Rt7Ys3Vb9Nc4Md",)
    ),
    Form(
        "slack", "xoxb-1234567890-0987654321-Zx8Kq2Lw5Hp1Rt7", ("xoxb-1234567890-0987654321-Zx8Kq2Lw5Hp1Rt7",)
    ),
    Form("gitlab", "glpat-Zx8Kq2Lw5Hp1Rt7Ys3Vb", ("glpat-Zx8Kq2Lw5Hp1Rt7Ys3Vb",)),
    Form("huggingface", "hf_Zx8Kq2Lw5Hp1Rt7Ys3Vb9Nc4Md6Fg0Jk", ("hf_Zx8Kq2Lw5Hp1Rt7Ys3Vb9Nc4Md6Fg0Jk",)),
    Form(
        "google-api", "AIzaSyZx8Kq2Lw5Hp1Rt7Ys3Vb9Nc4Md6Fg0Jk3", ("AIzaSyZx8Kq2Lw5Hp1Rt7Ys3Vb9Nc4Md6Fg0Jk3",)
    ),
    Form("stripe", "sk_live_Zx8Kq2Lw5Hp1Rt7Ys3Vb9N", ("sk_live_Zx8Kq2Lw5Hp1Rt7Ys3Vb9N",)),
    Form(
        "jwt",
        "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJxYS11c2VyIn0.Zx8Kq2Lw5Hp1Rt7Ys3Vb9Nc4Md6Fg0Jk",
        ("eyJzdWIiOiJxYS11c2VyIn0",),
    ),
    Form(
        "pem",
        "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEAzx8Kq2Lw5Hp1Rt7Ys3Vb9Nc4Md6Fg0Jk\n"
        "Q2h7xY9pLm4Nq8Rt3Vw6Zb1Kc5Df0Gh7Lk2\n-----END RSA PRIVATE KEY-----",
        ("MIIEpAIBAAKCAQEAzx8Kq2Lw5Hp1Rt7Ys3Vb9Nc4Md6Fg0Jk", "Q2h7xY9pLm4Nq8Rt3Vw6Zb1Kc5Df0Gh7Lk2"),
    ),
    Form("basic-b64", "auth blob " + _b64("ops:b64-8Kq2Lx5Wz"), (_b64("ops:b64-8Kq2Lx5Wz"),)),
    Form(
        "pem-b64",
        "tls.key: " + _b64("-----BEGIN PRIVATE KEY-----\nMIIEvQb64pemZx8Kq2Lw\n-----END PRIVATE KEY-----\n"),
        ("MIIEvQb64pemZx8Kq2Lw", _b64("-----BEGIN PRIVATE KEY-----\nMIIEvQb64pemZx8Kq2Lw")[:24]),
    ),
    Form("users-path", "/Users/qa-erin/Library/cache.db", ("qa-erin",)),
    Form("windows-path", r"C:\Users\qa-frank\AppData\wf.log", ("qa-frank",)),
    Form("windows-forward", "C:/Users/qa-gina/wf/cache", ("qa-gina",)),
    Form("root-path", "/root/.cache/wf/run.json", ("/root/.cache",)),
    Form("tmp-path", "/tmp/tmpq8zx2kl/out.json", ("/tmp/tmpq8zx2kl",)),
    Form("unc-path", r"\\qa-fileserver\builds\run-7", ("qa-fileserver",)),
    Form("file-url", "file:///home/qa-hank/x.json", ("qa-hank",)),
    Form("encoded-home", "next=%2Fhome%2Fqa-ivan%2Fwf", ("qa-ivan",)),
    Form("escaped-home", r"{\"path\": \"\/home\/qa-jill\/wf\"}", ("qa-jill",)),
    Form("tilde-path", "~/wf-secrets/qa-kate.txt", ("~/wf-secrets",)),
    Form("access-token-query", "https://api.example.test/cb?code=oc-2Kq8Lx5W&state=s", ("oc-2Kq8Lx5W",)),
    Form("pwd-assignment", "pwd=pw-9Qx2Lk7Z", ("pw-9Qx2Lk7Z",)),
    Form("session-json", '{"session": "sess-4Kx8Lq2W"}', ("sess-4Kx8Lq2W",)),
    # --- found by a hostile review: a secret column named in a header row, keys in later cells,
    # inline code, two-word names, .netrc, multi-line and prefixed string literals, values holding
    # "=", CDATA, password inputs, wrapped table cells, base64 after "=", keys split across nesting
    # levels, name/value pairs under other field names, pairs and flags in lists, client logins.
    Form("csv-header-column", "user,password,role\nalice,hc-5Tq8Wz1Xc3,admin\n", ("hc-5Tq8Wz1Xc3",)),
    Form("csv-key-later-cell", "prod,api_key,kc-7Lp2Qz9Wk4\n", ("kc-7Lp2Qz9Wk4",)),
    Form(
        "md-header-column",
        "| user | password |\n| --- | --- |\n| alice | mh-3Rt7Kx2Wq8 |\n",
        ("mh-3Rt7Kx2Wq8",),
    ),
    Form("md-key-later-cell", "| prod | api_key | mk-9Qw2Lx5Kd1 |\n", ("mk-9Qw2Lx5Kd1",)),
    Form("md-inline-code", "password: `mc-4Kx8Lq2Wz6`", ("mc-4Kx8Lq2Wz6",)),
    Form("two-word-key", "API key: tw-8Hd3Kq1Zt5", ("tw-8Hd3Kq1Zt5",)),
    Form("netrc", "machine api.example.test login bob password nr-6Yw2Qp9Lx3", ("nr-6Yw2Qp9Lx3",)),
    Form("toml-multiline", 'password = """\ntm-2Wq8Lz5Kp1\n"""', ("tm-2Wq8Lz5Kp1",)),
    Form("python-triple", "token = '''pt-7Zq2Kx5Lw9'''", ("pt-7Zq2Kx5Lw9",)),
    Form("bytes-literal", "{'token': b'bl-9Qx2Lk7Zw'}", ("bl-9Qx2Lk7Zw",)),
    Form("value-with-equals", "dsn: user=x password=ve-3Lp8Kq=Tail2Zw9x host=y", ("Tail2Zw9x",)),
    Form("xml-cdata", "<password><![CDATA[cd-9Lq3Zx7Kw]]></password>", ("cd-9Lq3Zx7Kw",)),
    Form("input-type-password", '<input type="password" value="it-2Kq8Lx5Wz">', ("it-2Kq8Lx5Wz",)),
    Form("td-code", "<tr><td>api_key</td><td><code>tc-6Kx2Qw9Lz</code></td></tr>", ("tc-6Kx2Qw9Lz",)),
    Form("dd-code", "<dl><dt>password</dt><dd><code>dc-3Hq8Wz5Kx</code></dd></dl>", ("dc-3Hq8Wz5Kx",)),
    Form("base64-after-equals", "ctx=" + _b64("ops:bq-8Kq2Lx5Wz"), (_b64("ops:bq-8Kq2Lx5Wz"),)),
    Form("split-key", '{"api": {"key": "sk2-9Zq4Lk7Wx"}}', ("sk2-9Zq4Lk7Wx",)),
    Form("split-key-yaml", "access:\n  key: sy-4Kq7Lx2Wz\n", ("sy-4Kq7Lx2Wz",)),
    Form("field-value-pair", '{"field": "password", "value": "nf-5Tq8Wz1Xc"}', ("nf-5Tq8Wz1Xc",)),
    Form("header-value-pair", '{"header": "Authorization", "value": "hv-2Lx9Qw7Zt4"}', ("hv-2Lx9Qw7Zt4",)),
    Form("pair-list", '[["OPENAI_API_KEY", "pl-7Hs2Kd9Qp"]]', ("pl-7Hs2Kd9Qp",)),
    Form("argv-list", '["mysqldump", "--password", "al-7Ks2Qx9Lw"]', ("al-7Ks2Qx9Lw",)),
    Form("mysql-p", "mysql -u root -pmy-4Kx8Lq2W3 appdb", ("my-4Kx8Lq2W3",)),
    Form("docker-login", "docker login -u bob -p dl-7Ks2Qx9Lw registry.example.test", ("dl-7Ks2Qx9Lw",)),
    Form("number-password", '{"password": 8473625190}', ("8473625190",)),
    Form(
        "telegram-bot-url",
        "https://api.telegram.org/bot123456789:AAHtg7Lk3Wx9Rt5bcdefgJKLMNPqrstuvwx/sendMessage",
        ("AAHtg7Lk3Wx9Rt5bcdefgJKLMNPqrstuvwx",),
    ),
    Form("jsessionid", "https://app.example.test/a;jsessionid=js-5Kq2Lx8Wz9?x=1", ("js-5Kq2Lx8Wz9",)),
    Form("pgpassword", "PGPASSWORD=pg-6Lp2Qz8Wk psql -h db", ("pg-6Lp2Qz8Wk",)),
    Form("redis-password", "redis://:rd-7Zq2Kx5Lw@localhost:6379/0", ("rd-7Zq2Kx5Lw",)),
    Form(
        "markdown-escaped-token",
        r"| mock:ghp\_Mq2Lx8Kz5Hp1Rt7Ys3Vb9Nc4Md6Fg0Jk2Lq | object-swap |",
        ("Mq2Lx8Kz5Hp1Rt7Ys3Vb9Nc4Md6Fg0Jk2Lq",),
    ),
    Form("path-segment-setting", "/srv/app/password=ps-8Kq2Lx5Wz/run.log", ("ps-8Kq2Lx5Wz",)),
    Form(
        "k8s-env-pair",
        "env:\n  - name: DB_PASSWORD\n    value: ke-5Tq8Wz1Xc\n  - name: MODE\n    value: fast\n",
        ("ke-5Tq8Wz1Xc",),
    ),
    Form(
        "yaml-secret-list", "secrets:\n  - ys-7Lp2Qz9Wk\n  - ys-2Wq8Lz5Kp\n", ("ys-7Lp2Qz9Wk", "ys-2Wq8Lz5Kp")
    ),
    Form("ruby-hash-rocket", "{ password => 'rb-4Kx8Lq2Wz' }", ("rb-4Kx8Lq2Wz",)),
)


#: Shapes that are evidence, never secrets: they must survive redaction unchanged.
EVIDENCE_SHAPES: tuple[str, ...] = (
    "sha256:" + "0123456789abcdef" * 4,
    "20261124T101500.123Z-3f2a9c1b7d4e",
    "123e4567-e89b-12d3-a456-426614174000",
    "worldforge 0.1.0",
    "torch==2.13.0",
    "wf-sanitize/3",
    "qwen2.5:latest@sha256:" + "fedcba9876543210" * 4,
    "a1b2c3d4e5f6",
    "0f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c",
    "max_tokens: 512",
    "token_count=12",
    "the token budget is 25,000 tokens per trial",
)


def _corpus_forms() -> tuple[Form, ...]:
    """One keyed sample per rule of the adopted gitleaks corpus (``tests/fixtures/secrets``), as a
    configuration line names it: forms this project did not write, planted beside its own."""
    corpus = json.loads(measure.DEFAULT_CORPUS.read_text(encoding="utf-8"))
    seen: set[str] = set()
    forms: list[Form] = []
    for sample in corpus["true_positives"]:
        rule, secret = sample["rule"], measure.value_of(sample["secret"].strip())
        if rule in seen or len(secret) < 12 or any(c.isspace() for c in secret) or "\\" in secret:
            continue
        seen.add(rule)
        forms.append(Form(f"gitleaks-{rule}", f"{measure.key_for(rule)} = {secret}", (secret,)))
    return tuple(forms)


#: gitleaks' published samples (MIT), one per rule.
CORPUS_FORMS: tuple[Form, ...] = _corpus_forms()
