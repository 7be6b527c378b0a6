"""Where the secret corpus comes from: gitleaks' file layout, licence, the fixture's default path,
the rule-family tables the measurement groups by, and the reader of one gitleaks commit.

Kept apart from the parsing so that the paths and families the fixture records are read in one
place.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
DEFAULT_OUTPUT = ROOT / "tests" / "fixtures" / "secrets" / "gitleaks_samples.json"
RULES_DIR = "cmd/generate/config/rules"
PATTERNS_FILE = "cmd/generate/config/utils/patterns.go"
CONFIG_FILE = "config/gitleaks.toml"
LICENCE = "MIT (Copyright (c) 2019 Zachary Rice); samples are gitleaks' published test data"
MAX_FALSE_POSITIVE_CHARS = 500
#: Upper bound added to the minimum of an unbounded repeat (``+``, ``*``, ``{n,}``).
UNBOUNDED_EXTRA = 8
#: Attempts at a "plausible" secret (one with a digit and no stop word) before giving up.
PLAUSIBLE_ATTEMPTS = 10_000

DEFAULT_FAMILY = "saas-api"
#: Rule family by rule file stem (the provider); anything not listed is ``saas-api``.
PROVIDER_FAMILIES: dict[str, str] = {
    # cloud and infrastructure platforms
    "alibaba": "cloud",
    "aws": "cloud",
    "azure": "cloud",
    "clickhouse": "cloud",
    "cloudflare": "cloud",
    "confluent": "cloud",
    "databricks": "cloud",
    "digitalocean": "cloud",
    "fastly": "cloud",
    "flyio": "cloud",
    "gcp": "cloud",
    "hashicorp": "cloud",
    "hashicorp_vault": "cloud",
    "heroku": "cloud",
    "kubernetes": "cloud",
    "netlify": "cloud",
    "openshift": "cloud",
    "planetscale": "cloud",
    "pulumi": "cloud",
    "scalingo": "cloud",
    "yandex": "cloud",
    # source control, CI/CD and package registries
    "artifactory": "source-control-ci",
    "bitbucket": "source-control-ci",
    "clojars": "source-control-ci",
    "codecov": "source-control-ci",
    "droneci": "source-control-ci",
    "github": "source-control-ci",
    "gitlab": "source-control-ci",
    "harness": "source-control-ci",
    "jfrog": "source-control-ci",
    "npm": "source-control-ci",
    "nuget": "source-control-ci",
    "octopusdeploy": "source-control-ci",
    "pypi": "source-control-ci",
    "rubygems": "source-control-ci",
    "snyk": "source-control-ci",
    "sonar": "source-control-ci",
    "sourcegraph": "source-control-ci",
    "travisci": "source-control-ci",
    # AI and machine-learning APIs
    "anthropic": "ai-ml",
    "cohere": "ai-ml",
    "huggingface": "ai-ml",
    "openai": "ai-ml",
    "perplexity": "ai-ml",
    "privateai": "ai-ml",
    # chat, e-mail and messaging
    "discord": "messaging",
    "gitter": "messaging",
    "intercom": "messaging",
    "mailchimp": "messaging",
    "mailgun": "messaging",
    "mattermost": "messaging",
    "messagebird": "messaging",
    "sendbird": "messaging",
    "sendgrid": "messaging",
    "sendinblue": "messaging",
    "slack": "messaging",
    "teams": "messaging",
    "telegram": "messaging",
    "twilio": "messaging",
    # payments, banking, crypto exchanges and commerce
    "bittrex": "payments-commerce",
    "coinbase": "payments-commerce",
    "easypost": "payments-commerce",
    "etsy": "payments-commerce",
    "finicity": "payments-commerce",
    "flutterwave": "payments-commerce",
    "freemius": "payments-commerce",
    "gocardless": "payments-commerce",
    "kraken": "payments-commerce",
    "kucoin": "payments-commerce",
    "plaid": "payments-commerce",
    "shippo": "payments-commerce",
    "shopify": "payments-commerce",
    "square": "payments-commerce",
    "squarespace": "payments-commerce",
    "stripe": "payments-commerce",
    # rule files that are not one provider
    "curl": "credentials-in-url-or-command",
    "generic": "generic",
    "jwt": "jwt",
    "privatekey": "private-key",
}
#: Rule ids whose family differs from their file's.
RULE_FAMILIES: dict[str, str] = {
    "age-secret-key": "private-key",
    "hashicorp-tf-password": "generic",
    "nuget-config-password": "generic",
    "sidekiq-sensitive-url": "credentials-in-url-or-command",
}


def family_of(provider: str, rule: str) -> str:
    """The rule family of a sample: rule override, else provider table, else ``saas-api``."""
    return RULE_FAMILIES.get(rule, PROVIDER_FAMILIES.get(provider, DEFAULT_FAMILY))


# --------------------------------------------------------------------------------------------
# Reading the gitleaks tree
# --------------------------------------------------------------------------------------------


class GitTree:
    """Files of one commit of a git directory (bare or with a work tree), read via ``git``."""

    def __init__(self, path: Path, revision: str = "HEAD") -> None:
        self.path = path
        self.commit = self._git("rev-parse", "--verify", f"{revision}^{{commit}}").strip()

    def _git(self, *args: str) -> str:
        result = subprocess.run(
            ["git", "-C", str(self.path), *args], check=True, capture_output=True, text=False
        )
        return result.stdout.decode("utf-8")

    def list_dir(self, directory: str) -> list[str]:
        out = self._git("ls-tree", "--name-only", f"{self.commit}:{directory}")
        return sorted(f"{directory}/{name}" for name in out.splitlines() if name)

    def read(self, path: str) -> str:
        return self._git("show", f"{self.commit}:{path}")
