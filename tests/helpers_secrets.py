"""The secret-scanning corpus: real-shaped credentials built from their documented
formats (never real ones), and ordinary notes that must pass.

``SECRETS`` holds ``(kind, text)`` pairs, each text a note with one credential in it;
``ORDINARY`` holds notes an agent writes every day: code, hashes, UUIDs, image
references, commit ids, long identifiers, prose about passwords and tokens.
"""

from __future__ import annotations

import base64
import hashlib
import json
import random
import string
import uuid

_RNG = random.Random(20261130)
ALNUM = string.ascii_letters + string.digits
B32 = string.ascii_uppercase + "234567"
URLSAFE = ALNUM + "-_"
HEX = "0123456789abcdef"


def rand(alphabet: str, n: int) -> str:
    return "".join(_RNG.choice(alphabet) for _ in range(n))


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def _jwt(claims: dict[str, object]) -> str:
    header = _b64url(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
    payload = _b64url(json.dumps(claims).encode())
    return f"{header}.{payload}.{_b64url(_RNG.randbytes(32))}"


def _pem(label: str) -> str:
    body = base64.b64encode(_RNG.randbytes(96)).decode()
    return f"-----BEGIN {label}-----\n{body[:64]}\n{body[64:]}\n-----END {label}-----"


def _secrets() -> list[tuple[str, str]]:
    s: list[tuple[str, str]] = []
    # AWS: access key ids are a 4-letter prefix and 16 base-32 characters
    s.append(("AWS access key id", f"deploy user key: AKIA{rand(B32, 16)}"))
    s.append(("AWS access key id", f"export AWS_ACCESS_KEY_ID=AKIA{rand(B32, 16)}"))
    s.append(("AWS access key id", f"temporary creds ASIA{rand(B32, 16)} from sts"))
    s.append(
        (
            "AWS secret access key",
            f"[default]\naws_secret_access_key = {rand(ALNUM + '/+', 40)}",
        )
    )
    s.append(("AWS secret access key", f"AWS_SECRET_ACCESS_KEY: {rand(ALNUM + '/+', 40)}"))
    # GitHub: classic tokens ghp_/gho_/ghu_/ghs_/ghr_ + 36; fine-grained github_pat_22_59
    for prefix in ("ghp_", "gho_", "ghu_", "ghs_", "ghr_"):
        s.append(("GitHub token", f"use token {prefix}{rand(ALNUM, 36)} for the CI bot"))
    for _ in range(2):
        token = f"github_pat_11{rand(ALNUM, 20)}_{rand(ALNUM, 59)}"
        s.append(("GitHub fine-grained token", f"fine-grained PAT: {token}"))
    # GitLab: glpat- + 20 (personal), gldt- deploy tokens, glrt- runner tokens
    s.append(("GitLab token", f"GITLAB_TOKEN=glpat-{rand(URLSAFE, 20)}"))
    s.append(("GitLab token", f"deploy token gldt-{rand(URLSAFE, 20)}"))
    s.append(("GitLab token", f"runner: glrt-{rand(URLSAFE, 20)}"))
    # Slack: xoxb-/xoxp- tokens, app-level xapp-, incoming webhooks
    num = string.digits
    s.append(("Slack token", f"bot token xoxb-{rand(num, 12)}-{rand(num, 13)}-{rand(ALNUM, 24)}"))
    s.append(
        (
            "Slack token",
            f"user token xoxp-{rand(num, 12)}-{rand(num, 12)}-{rand(num, 13)}-{rand(HEX, 32)}",
        )
    )
    upper_num = string.ascii_uppercase + string.digits
    s.append(
        (
            "Slack token",
            f"socket mode: xapp-1-{rand(upper_num, 11)}-{rand(num, 13)}-{rand(HEX, 64)}",
        )
    )
    for _ in range(2):
        hook = (
            f"https://hooks.slack.com/services/T{rand(upper_num, 8)}/B{rand(upper_num, 8)}/"
            f"{rand(ALNUM, 24)}"
        )
        s.append(("Slack webhook URL", f"alerts go to {hook}"))
    # Stripe: secret and restricted live keys
    s.append(("Stripe live key", f"STRIPE_KEY=sk_live_{rand(ALNUM, 24)}"))
    s.append(("Stripe live key", f"restricted key rk_live_{rand(ALNUM, 99)}"))
    # Google API keys: AIza + 35
    s.append(("Google API key", f"maps key AIza{rand(URLSAFE, 35)}"))
    s.append(("Google API key", f'"apiKey": "AIza{rand(URLSAFE, 35)}",'))
    # OpenAI: project, service-account and legacy keys (T3BlbkFJ marks the legacy form)
    s.append(("OpenAI API key", f"OPENAI_API_KEY=sk-proj-{rand(URLSAFE, 156)}"))
    s.append(("OpenAI API key", f"service account sk-svcacct-{rand(URLSAFE, 120)}"))
    s.append(("OpenAI API key", f"old key sk-{rand(ALNUM, 20)}T3BlbkFJ{rand(ALNUM, 20)}"))
    # Anthropic: sk-ant-api03- and sk-ant-admin01- + 93 + AA
    s.append(("Anthropic API key", f"ANTHROPIC_API_KEY=sk-ant-api03-{rand(URLSAFE, 93)}AA"))
    s.append(("Anthropic API key", f"admin key sk-ant-admin01-{rand(URLSAFE, 93)}AA"))
    # npm: npm_ + 36; PyPI: pypi- + a macaroon whose base64 starts AgEIcHlwaS5vcmc
    s.append(("npm token", f"//registry.npmjs.org/:_authToken=npm_{rand(ALNUM, 36)}"))
    s.append(("npm token", f"publish with npm_{rand(ALNUM, 36)}"))
    s.append(("PyPI token", f"password = pypi-AgEIcHlwaS5vcmc{rand(URLSAFE, 70)}"))
    s.append(("PyPI token", f"TWINE_PASSWORD=pypi-AgEIcHlwaS5vcmc{rand(URLSAFE, 120)}"))
    # JWTs: base64url JSON header and payload, then a signature
    s.append(("JSON Web Token", f"Authorization: Bearer {_jwt({'sub': '1234', 'admin': True})}"))
    s.append(("JSON Web Token", f"session cookie\n{_jwt({'user': 'ana', 'exp': 1893456000})}"))
    # private key blocks
    for label in (
        "RSA PRIVATE KEY",
        "EC PRIVATE KEY",
        "OPENSSH PRIVATE KEY",
        "PRIVATE KEY",
        "ENCRYPTED PRIVATE KEY",
    ):
        s.append(("private key", f"the deploy key:\n{_pem(label)}\n"))
    s.append(("private key", f"gpg export:\n{_pem('PGP PRIVATE KEY BLOCK')}"))
    # URLs with an embedded password
    s.append(
        (
            "password in a URL",
            f"DATABASE_URL=postgres://app:{rand(ALNUM, 18)}@db.internal:5432/app",
        )
    )
    s.append(("password in a URL", f"mirror https://deploy:{rand(ALNUM, 14)}@git.example.com/r"))
    s.append(("password in a URL", f"cache at redis://default:{rand(ALNUM, 22)}@cache:6379/0"))
    # generic assignments of high-entropy values
    punct = ALNUM + "!#%&*+"
    s.append(("password/secret/token assignment", f"DB_PASSWORD={rand(punct, 20)}7"))
    s.append(("password/secret/token assignment", f'client_secret: "{rand(ALNUM, 32)}9"'))
    s.append(("password/secret/token assignment", f"auth_token = '{rand(ALNUM, 40)}1'"))
    s.append(("password/secret/token assignment", f"api_key={rand(HEX, 32)}"))
    return s


def _ordinary() -> list[str]:
    notes: list[str] = []
    for i in range(30):
        sha = hashlib.sha1(f"commit {i}".encode()).hexdigest()
        notes.append(f"Fixed the flaky upload test in commit {sha}; see PR #{100 + i}.")
    for i in range(25):
        digest = hashlib.sha256(f"artifact {i}".encode()).hexdigest()
        notes.append(f"release-{i}.tar.gz sha256 {digest}")
    for i in range(25):
        notes.append(
            f"Request id {uuid.UUID(int=_RNG.getrandbits(128))} failed with 502 (retry {i})"
        )
    for i in range(15):
        data = base64.b64encode(_RNG.randbytes(60)).decode()
        notes.append(f"![diagram {i}](data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAA{data})")
    for i in range(20):
        ident = f"handleUserAccountSubscriptionRenewalWebhookEventForRegion{i}Handler"
        notes.append(f"Renamed `{ident}` to `RenewalHandler{i}`; callers updated.")
    code = [
        "def tokenize(text: str) -> list[str]:\n    return text.split()",
        "const token = await getToken(session);\nif (!token) throw new Error('login');",
        "password = getpass.getpass('password: ')",
        "api_key = os.environ['OPENAI_API_KEY']",
        "secret = vault.read('kv/prod/db')['password']",
        "export function hash(s: string) { return s.split('').reduce((a, c) => a + c.charCodeAt(0), 0); }",
        "SELECT id, email FROM users WHERE password_reset_at > now() - interval '1 day';",
        'curl -H "Authorization: Bearer $TOKEN" https://api.example.com/v1/items',
        "DATABASE_URL=postgres://app:${DB_PASSWORD}@db.internal:5432/app",
        "git clone https://github.com/example/project.git && cd project",
        "token_budget = 8000  # characters of the panel",
        "for key, value in sorted(env.items()):\n    print(key, len(value))",
        "PASSWORD_MIN_LENGTH = 12",
        "secret_name: prod-db-credentials-2024",
        "The refresh token expires after 3600 seconds; rotate it with the CLI.",
        "Never paste a password into notes: use the vault path instead.",
        "access_key rotation is on the first Monday of each month",
        "Use `gitmem guard allow` only after a review.",
        "ssh-keygen -t ed25519 -C ops@example.com -f ~/.ssh/deploy",
        "The public key is in keys/deploy.pub (BEGIN OPENSSH PUBLIC KEY)",
        "https://user@example.com/repo.git is the read-only mirror",
        "mongodb://localhost:27017/test has no auth in dev",
        "tasks: risk-assessment, desk-review, task-board-cleanup",
        "Model: claude-sonnet-4-5; tokens: 4096 max; temperature 0.2",
        "redis://:password@localhost:6379 is the example in the docs",
        "postgres://user:password@localhost/db is the README's example",
        "npm install --save-dev typescript@5.6.3 esbuild@0.24.0",
        "pip install 'gitmem[anthropic]>=0.1'",
        "token=abc is the placeholder the tests use",
        "JWT layout: header.payload.signature, each base64url",
        "sk-learn is the import name people mistype for sklearn",
        "AKIA prefixes mark AWS access key ids; do not paste one here",
        "ghp_ is the prefix of a GitHub classic token",
        "Key ID format: 20 upper-case characters",
        "id_rsa.pub fingerprint SHA256:47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU",
        "version: 1.2.3-beta.4+build.5678",
        "Docker image sha256:9b2a7c4d3e1f0a8b6c5d4e3f2a1b0c9d8e7f6a5b4c3d2e1f0a9b8c7d6e5f4a3b",
        "Kubernetes secret name: api-gateway-tls",
        "The secret santa list is in the shared drive",
        "password policy: 12+ characters, one digit, rotated yearly",
    ]
    notes += code
    prose = [
        "The staging cluster is rolled one node at a time: drain, upgrade, uncordon.",
        "Customer asked for CSV export with UTF-8 BOM for Excel.",
        "Use `make bench` under no load to compare with the peer.",
        "Meeting notes: agreed to ship the console behind a flag.",
        "The search index is rebuilt from the commits when it is damaged.",
        "Retry budget: three attempts with exponential backoff from 200 ms.",
        "Timezone bugs come from naive datetimes; always use UTC.",
        "The API returns 429 when over 100 requests per minute per token.",
        "Store ids look like profile/researcher or instance/r-1.",
        "Remember: the user prefers concise answers with code first.",
    ]
    for i in range(60):
        notes.append(f"{prose[i % len(prose)]} ({i})")
    for i in range(10):
        row = ", ".join(f"{_RNG.randint(0, 10**6)}" for _ in range(12))
        notes.append(f"benchmark row {i}: {row}")
    return notes


SECRETS = _secrets()
ORDINARY = _ordinary()
