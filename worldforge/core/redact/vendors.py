"""Vendor-prefixed credentials beyond the common ones in :mod:`worldforge.core.redact.rules`.

A token whose prefix names its issuer is a secret wherever it appears, with or without a key name
beside it (a bare token in a log line or a model reply). These patterns are written from the
vendors' documented formats; they are kept apart from the main rule list so the list of issuers
can grow without touching the structured-form rules.
"""

from __future__ import annotations

import re

from worldforge.core.redact.keys import Rule, redact_whole, unless_placeholder

_B = r"(?<![A-Za-z0-9_\-])"
_E = r"(?![A-Za-z0-9_\-])"


def _rule(rule_id: str, description: str, keywords: tuple[str, ...], regex: str) -> Rule:
    return Rule(rule_id, description, keywords, re.compile(regex), unless_placeholder(redact_whole))


VENDOR_RULES: tuple[Rule, ...] = (
    _rule(
        "huggingface-org-token",
        "Hugging Face organization tokens",
        ("api_org_",),
        _B + r"api_org_[A-Za-z]{30,}",
    ),
    _rule(
        "aws-bedrock-key",
        "Amazon Bedrock API keys",
        ("absk", "bedrock-api-key-"),
        r"(?<![A-Za-z0-9+/])(?:ABSK[A-Za-z0-9+/]{60,}={0,2}|bedrock-api-key-[A-Za-z0-9+/]{40,}={0,2})",
    ),
    _rule(
        "vault-token",
        "HashiCorp Vault service, batch and recovery tokens",
        ("hvs.", "hvb.", "hvr."),
        _B + r"hv[sbr]\.[A-Za-z0-9_\-]{24,}",
    ),
    _rule("heroku-key", "Heroku API keys", ("hrku-",), _B + r"HRKU-[A-Za-z0-9_\-]{20,}"),
    _rule(
        "telegram-bot-token",
        "Telegram bot tokens (bot id, colon, 35 characters; also inside api.telegram.org/bot… URLs)",
        (":aa",),
        # From the colon on (a literal start keeps the scan fast on digest-heavy text): the bot id
        # before it is public, the 35 characters after it are the secret.
        r"(?<=\d):AA[A-Za-z0-9_\-]{33}(?![A-Za-z0-9_\-])",
    ),
    _rule(
        "flyio-token",
        "Fly.io access tokens",
        ("fm1", "fm2_", "fo1_"),
        r"(?<![A-Za-z0-9])(?:fm[12][ar]?_[A-Za-z0-9+/]{40,}={0,3}|fo1_[A-Za-z0-9_\-]{30,})",
    ),
    _rule(
        "slack-config-token",
        "Slack app configuration and refresh tokens (xoxe)",
        ("xoxe",),
        _B + r"xoxe(?:\.xox[bp])?-\d-[A-Za-z0-9]{40,}" + _E,
    ),
    _rule(
        "slack-webhook",
        "Slack webhook and workflow URLs",
        ("hooks.slack.com",),
        r"(?:https?://)?hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9+/_\-]{20,}",
    ),
    _rule("openshift-token", "OpenShift user tokens", ("sha256~",), r"sha256~[A-Za-z0-9_\-]{43}" + _E),
    _rule(
        "azure-ad-client-secret",
        "Azure AD client secrets (…Q~…)",
        ("q~",),
        r"(?<![A-Za-z0-9_~.\-])[A-Za-z0-9_~.\-]{3}\dQ~[A-Za-z0-9_~.\-]{31,34}(?![A-Za-z0-9_~.\-])",
    ),
    _rule(
        "onepassword-token",
        "1Password secret keys and service-account tokens",
        ("a3-", "ops_ey"),
        r"(?<![A-Za-z0-9])(?:A3-[A-Z0-9]{6}-(?:[A-Z0-9]{11}|[A-Z0-9]{6}-[A-Z0-9]{5})-[A-Z0-9]{5}-[A-Z0-9]{5}"
        r"-[A-Z0-9]{5}|ops_eyJ[A-Za-z0-9+/=_\-]{100,})",
    ),
)

__all__ = ["VENDOR_RULES"]
