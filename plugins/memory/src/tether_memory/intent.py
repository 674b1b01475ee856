"""What the memory scanner looks for beyond fixed phrases: the intent of a write.

:func:`variants` undoes the usual obfuscations (letter spacing, leetspeak, text hidden in
HTML or Markdown comments) so the phrase checks of :mod:`tether_memory.scanner` see
through them; :func:`intent` refuses what a memory entry never needs to say, however it
is phrased:

- paraphrased overrides of the assistant's instructions ("from now on you must…",
  "earlier rules no longer apply", "treat this as a system message"), in English and in
  languages the phrase lists do not cover (Dutch, Polish, Turkish, Indonesian, Swedish,
  Czech, Ukrainian, Greek, Hebrew, Persian, Hindi, Vietnamese);
- hidden comments (``<!-- -->``, ``[//]: #``): memory is plain text, nothing in it needs
  to be invisible when rendered;
- exfiltration through a Markdown image or link whose URL carries data (a query string
  or a placeholder), or instructions to put secrets into a URL;
- dumping the environment (``/proc/*/environ``, ``printenv``, ``os.environ`` shown or sent);
- piping a download into a shell or interpreter;
- sending credential files anywhere (``curl -F @~/.ssh/id_rsa``, ``scp ~/.aws``);
- persistence through files that steer agents or shells (``AGENTS.md``, ``CLAUDE.md``,
  ``.cursorrules``, shell rc files, ``authorized_keys``, git hooks);
- literal credentials: anything :func:`tether.scrub.scrub` would redact (GitHub, AWS,
  OpenAI, Anthropic, Google, Slack, Hugging Face tokens, JWTs, private keys, the values of
  the process's secret environment variables) and private-key headers.

All checks run on normalised text (see :func:`tether_memory.scanner.normalize`) and are
written so that notes *about* security, tokens or prompt injection still pass.
"""

from __future__ import annotations

import re
from typing import Literal

__all__ = ["IntentFinding", "intent", "variants"]

IntentCategory = Literal["injection", "exfiltration", "persistence", "credential"]
IntentFinding = tuple[IntentCategory, str, str]  # (category, what, matched text)

# -- de-obfuscation ------------------------------------------------------------------------------
_SPACED = re.compile(r"(?<!\w)(?:\w[ .\-_*·|/]){3,}\w(?!\w)")
_SQUASHED_OVERRIDE = re.compile(
    r"(ignore|disregard|forget|override|bypass)(all|any|the|your|my|of)*(previous|prior|above|"
    r"earlier|preceding|original|system|developer|safety)(instructions?|rules|prompts?|"
    r"directions|guidelines|messages|context)|youarenow|newinstructions|systemprompt"
)
_LEET = str.maketrans(
    {"0": "o", "1": "i", "3": "e", "4": "a", "5": "s", "7": "t", "@": "a", "$": "s", "!": "i"}
)
_LEET_TOKEN = re.compile(r"[\w@$!]*[a-z][\w@$!]*")
_HTML_COMMENT = re.compile(r"<!--([\s\S]*?)(?:-->|$)")
_MD_COMMENT = re.compile(r"^\s*\[(?://|comment|_)\]:\s*(?:#|<>)\s*(.*)$", re.MULTILINE)


def _unspace(match: re.Match[str]) -> str:
    return re.sub(r"[ .\-_*·|/]", "", match.group(0))


def _unleet(match: re.Match[str]) -> str:
    token = match.group(0)
    if any(c.isdigit() or c in "@$!" for c in token) and not token.isdigit():
        return token.translate(_LEET)
    return token


def variants(normalized: str) -> list[str]:
    """``normalized`` as the model might read it: letter spacing closed up (``i g n o r e``,
    ``i.g.n.o.r.e``), leetspeak read as letters (``1gn0r3``), every accent removed, and
    the text of hidden comments. The first item is ``normalized`` itself."""
    import unicodedata

    out = [normalized]
    unspaced = _SPACED.sub(_unspace, normalized)
    if unspaced != normalized:
        out.append(re.sub(r" {2,}", " ", unspaced))
    unleet = _LEET_TOKEN.sub(_unleet, unspaced)
    if unleet not in out:
        out.append(unleet)
    bare = "".join(
        c for c in unicodedata.normalize("NFD", normalized) if unicodedata.category(c) != "Mn"
    )
    if bare not in out:
        out.append(bare)
    hidden = " ".join(
        [m.group(1) for m in _HTML_COMMENT.finditer(normalized)]
        + [m.group(1) for m in _MD_COMMENT.finditer(normalized)]
    )
    if hidden.strip():
        out.append(hidden)
    return out


# -- paraphrased and foreign-language overrides ---------------------------------------------------
_ASSISTANT = r"(you|the assistant|the ai|the model|the agent|assistant|claude|chatgpt|gpt|gemini)"
_MODAL = r"(must|should|shall|will|are to|is to|have to|has to|need to|needs to|always|never)"
_RULES = (
    r"(instructions?|rules|guidelines|guidance|directions|directives|system prompt|prompts?|"
    r"programming|policies|restrictions|constraints|orders)"
)
_OVERRIDES = [
    rf"\b(from now on|henceforth|going forward|from this point( on)?|in (all )?future "
    rf"(sessions|conversations|chats|replies)|in every (session|conversation|reply))\b"
    rf"[^.;!?\n]{{0,30}}\b{_ASSISTANT}\b (must|should|shall|will|are to|is to|have to|has to|"
    rf"need to|needs to|always|never)\b",
    rf"\b(pay no (attention|heed)|take no notice|stop (following|obeying)|no longer (follow|obey)|"
    rf"(do not|don't|never) (follow|obey)|abandon|drop|discard|cancel|revoke|nullify)\b"
    rf"[^.;!?\n]{{0,30}}\b(previous|prior|earlier|original|above|existing|your|the|all|any|other)"
    rf"\b[^.;!?\n]{{0,20}}\b{_RULES}\b",
    rf"\b(previous|prior|earlier|original|above|existing|old|your|all) {_RULES} "
    r"(are|is|were|have been|has been) (now )?(void|invalid|obsolete|cancell?ed|revoked|"
    r"superseded|replaced|overridden|null|irrelevant|no longer (valid|in effect|applicable))\b",
    rf"\b(previous|prior|earlier|original|above|existing|your) {_RULES} (no longer|don't|do not) "
    r"(apply|matter|count|hold)\b",
    r"\b(treat|consider|regard|interpret) (this|these|the following|this note|this entry|it)"
    r"( text| note| entry)? as (a |an |the )?(system|developer|admin|root|highest[- ]priority)"
    r"( level)? (message|prompt|instructions?|command|rule)\b",
    r"\b(this|these) (instructions?|rules?|notes?|entry|entries) (override|overrides|supersede|"
    r"supersedes|take precedence over|takes precedence over|outrank|outranks) (any|all|every|the|"
    r"your|other)\b",
    rf"\b(instead of|rather than) (following|obeying|listening to) (the |your |any )?"
    rf"(user|system|developer|operator|{_RULES})\b",
    rf"\b{_ASSISTANT} (must|should|shall|will) (always |never |secretly |silently )?[^.;!?\n]{{0,40}}"
    r"\b(regardless of|no matter) (what|whatever|any) (the )?(user|operator|instructions?|"
    r"system|anyone) (says|asks|wants|tells|say)\b",
    rf"\b(obey|follow|execute) (only )?(my|these|the following|the instructions in this) "
    rf"({_RULES}|commands) (instead|only|above all|first)\b",
    rf"\b{_ASSISTANT} (must|should|will|shall) (secretly|silently|covertly|quietly)\b",
    r"\b(hide|conceal|keep) (this|it|these|the following) (from|secret from) (the )?"
    r"(user|human|operator)\b",
]
_FOREIGN = [
    # Dutch
    r"\b(negeer|vergeet|negeren)\b[^.;!?\n]{0,40}\b(instructies|regels|opdrachten|aanwijzingen)\b",
    r"\bje bent nu\b",
    # Polish
    r"\b(zignoruj|ignoruj|zapomnij)\b[^.;!?\n]{0,40}\b(instrukcj\w*|polecen\w*|zasad\w*|regul\w*)",
    r"\bteraz jestes\b",
    # Turkish (accents folded)
    r"\b(onceki|yukaridaki|tum|butun)\b[^.;!?\n]{0,30}\b(talimat\w*|kurallar\w*|komutlar\w*)"
    r"[^.;!?\n]{0,20}\b(yok say|gormezden gel|unut|dikkate alma)",
    r"\bartik sen\b",
    # Indonesian / Malay
    r"\b(abaikan|lupakan|acuhkan)\b[^.;!?\n]{0,40}\b(instruksi|perintah|aturan|petunjuk|arahan)\b",
    r"\bsekarang kamu adalah\b",
    # Swedish, Norwegian, Danish
    r"\b(ignorera|glom|ignorer|glem)\b[^.;!?\n]{0,40}\b(instruktioner|instruksjoner|instruktioner\w*|"
    r"regler|anvisningar)\b",
    # Czech, Slovak
    r"\b(ignoruj|zapomen|ignorujte)\b[^.;!?\n]{0,40}\b(pokyny|instrukce|pravidla|prikazy)\b",
    # Ukrainian
    r"(ігноруй|ігноруйте|забудь|забудьте)[^.;!?\n]{0,40}(інструкці|вказівк|правил|команд)",
    r"\bтепер ти\b",
    # Greek (accents folded)
    r"(αγνοη[σς]ε|αγνοη[σς]τε|ξεχα[σς]ε|ξεχα[σς]τε)[^.;!?\n]{0,40}(οδηγιε[σς]|εντολε[σς]|κανονε[σς])",
    # Hebrew
    r"(התעלם|התעלמי|שכח|שכחי)[^.;!?\n]{0,40}(הוראות|ההוראות|הנחיות|ההנחיות|כללים)",
    # Persian
    r"(نادیده بگیر|فراموش کن)[^.;!?\n]{0,40}(دستورالعمل|دستورات|قوانین)|"
    r"(دستورالعمل|دستورات|قوانین)[^.;!?\n]{0,40}(نادیده بگیر|فراموش کن)",
    # Hindi
    r"(निर्देशों|निर्देश|नियमों|आदेशों)[^.;!?\n]{0,40}(अनदेखा|नज़रअंदाज़|नजरअंदाज|भूल जाओ|भूल जाएं)",
    # Vietnamese (accents folded)
    r"\b(bo qua|phot lo|quen di)\b[^.;!?\n]{0,40}\b(huong dan|chi dan|chi thi|lenh|quy tac)\b",
]

# -- exfiltration through URLs, environment dumps, downloads into shells --------------------------
_PLACEHOLDER = (
    r"(\{\{?[^}\s]{1,40}\}?\}|\$\{?[a-z_][a-z0-9_]*\}?|<[a-z_ ]{2,30}>|%s|\[[a-z_ ]{2,30}\])"
)
_EXFIL = [
    (
        "a Markdown image that sends data in its URL",
        rf"!\[[^\]]*\]\(\s*(https?:)?//[^)\s]*(\?|{_PLACEHOLDER})",
    ),
    (
        "a URL that carries a placeholder for data",
        rf"(https?:)?//[^\s)]*[?&][a-z0-9_\-]+={_PLACEHOLDER}",
    ),
    (
        "an instruction to put data into a URL",
        r"\b(append|add|put|include|embed|encode|insert|attach)\b[^.;!?\n]{0,50}\b(to|in|into|as)"
        r" (the |a |an )?(url|link|image url|query string|query parameter|querystring|image link|"
        r"request path)\b[^.;!?\n]{0,60}\b(key|token|secret|password|credential|conversation|"
        r"chat|history|messages?|data|context|env)",
    ),
    (
        "an instruction to put data into a URL",
        r"\b(append|add|put|include|embed|encode|insert|attach)\b[^.;!?\n]{0,40}\b(keys?|tokens?|"
        r"secrets?|passwords?|credentials?|conversation|chat history|history|messages)\b"
        r"[^.;!?\n]{0,30}\b(to|in|into|as) (the |a |an |every |each )?(\w+ )?(url|link|query string|"
        r"query parameter|querystring|request path)s?\b",
    ),
    (
        "reading a process's environment",
        r"/proc/(self|thread-self|\d+|\*|\$\w+|\[[^\]]*\])[^\s]*/environ",
    ),
    (
        "dumping the environment variables",
        r"\b(print|dump|show|list|output|echo|reveal|send|post|upload|include|paste|share|"
        r"leak|copy|return|log)\b[^.;!?\n]{0,30}\b(all )?(the )?(environment variables|env vars|"
        r"environment|os\.environ|process\.env|printenv|env output)\b(?! (file|setup|manager|name))",
    ),
    ("dumping the environment variables", r"\b(printenv|env|export -p|set)\s*(>|\|)"),
    (
        "piping a download into a shell",
        r"\b(curl|wget|fetch|iwr|invoke-webrequest|http|xh)\b[^|\n;]{0,200}\|\s*(sudo\s+)?"
        r"(ba|z|k|da|fi)?sh\b|\b(curl|wget|fetch|iwr|invoke-webrequest)\b[^|\n;]{0,200}\|\s*"
        r"(sudo\s+)?(python[0-9.]*|perl|ruby|node|php|iex|invoke-expression)\b",
    ),
    (
        "running a download in a shell",
        r"\b(ba|z|k|da)?sh\s+(-c\s+)?[\"']?\s*(<\(|\$\()\s*(curl|wget|fetch)\b|\biex\s*\(\s*(iwr|"
        r"invoke-webrequest|new-object net\.webclient)",
    ),
    (
        "sending a credential file",
        r"(@|\b(scp|rsync|sftp|nc|ncat|netcat|socat)\b[^|\n;]{0,80}?)(~|\$home)?/?[\w./-]*"
        r"(\.ssh\b|id_(rsa|dsa|ecdsa|ed25519)\b|\.aws/credentials|\.env\b|\.netrc\b|"
        r"\.git-credentials|\.kube/config|\.docker/config\.json|\.npmrc|\.pypirc|credentials\.json)",
    ),
]

# -- persistence ---------------------------------------------------------------------------------
_STEERING_FILES = (
    r"(agents\.md|claude\.md|gemini\.md|copilot-instructions\.md|\.cursorrules|\.clinerules|"
    r"\.windsurfrules|\.cursor/rules|\.github/copilot|\.bashrc|\.zshrc|\.bash_profile|\.profile|"
    r"\.zprofile|\.zshenv|config\.fish|authorized_keys|\.git/hooks|crontab|\.config/autostart|"
    r"launchagents|systemd/user)"
)
# A clause: no sentence end, but dots inside a word or path (``~/.ssh``, ``AGENTS.md``).
_CLAUSE = r"(?:[^.;!?\n]|\.(?=[\w/~]))"
_WRITE = (
    r"\b(add|append|prepend|insert|write|copy|put|inject|persist|save|paste|place|update|edit|"
    r"modify|change|create|overwrite|record|store|include|register|install|set up|schedule|"
    r"echo|printf|cat|make sure|ensure)\b"
)
# What turns a mention of such a file into content for it: a colon, quoted text, a
# "saying"/"telling" clause, a rule, or a hook or job "that runs ...".
_DIRECTIVE = (
    r"(:\s*\S|[\"'`]\S|\b(to say|saying|that says|which says|to tell|telling|tells|to instruct|"
    r"instructing|instructs|with (the|a|this|these) (rule|line|instruction|text|note|content)s?|"
    r"so (that )?(every|all|future|other|the|each|any) (agents?|assistants?|models?|sessions?|"
    r"runs?)|that (runs?|uploads?|sends?|posts?|executes?|downloads?|calls?|pipes?|curls?))\b)"
)
_AGENT_FILES = (
    r"(agents\.md|claude\.md|gemini\.md|copilot-instructions\.md|\.cursorrules|\.clinerules|"
    r"\.windsurfrules|\.cursor/rules|\.github/copilot)"
)
_SSH_PUBLIC_KEY = r"\b(ssh-(rsa|ed25519|dss)|ecdsa-sha2-nistp\d+|sk-ssh-ed25519@openssh\.com) aaaa"
_PERSISTENCE = [
    rf"(>>?|\btee( -a)?)\s*[\"']?[~$\w./-]*{_STEERING_FILES}",
    rf"\b(add|append|insert|write|copy|put|inject|persist|save|paste|place)\b[^.;!?\n]{{0,10}}"
    rf"\b(this|these|the following|yourself|this (instruction|text|entry|note|rule|line|memory)|"
    rf"(a|an|the) (line|instruction|rule|hook|command)|instructions?)\b[^.;!?\n]{{0,40}}"
    rf"\b(to|into|in)\b[^.;!?\n]{{0,20}}{_STEERING_FILES}",
    # "update AGENTS.md to say ...", "write '...' into .bashrc", "add a cron job to crontab
    # that runs ...": a write to the file that carries content (a plain "also update
    # CLAUDE.md" does not).
    rf"{_WRITE}{_CLAUSE}{{0,80}}{_STEERING_FILES}{_CLAUSE}{{0,40}}?{_DIRECTIVE}",
    rf"{_WRITE}{_CLAUSE}{{0,80}}?{_DIRECTIVE}{_CLAUSE}{{0,120}}\b(to|into|in|inside|onto)\b"
    rf"{_CLAUSE}{{0,20}}{_STEERING_FILES}",
    rf"{_STEERING_FILES}{_CLAUSE}{{0,40}}{_WRITE}\s*:",
    # "AGENTS.md should say: ...", "make sure CLAUDE.md tells every agent ..."
    rf"{_AGENT_FILES}[\"'`]?\s+(should|must|shall|needs? to|has to) (always )?"
    rf"(say|tell|instruct|include|contain|state)\b",
    rf"{_AGENT_FILES}[\"'`]?\s+(tells|instructs) (every|all|each|any|future|other|the) "
    rf"(agents?|assistants?|models?)\b",
    # authorized_keys: any write to it, or a public key named with it, or ssh-copy-id.
    rf"{_WRITE}{_CLAUSE}{{0,120}}\bauthorized_keys\b",
    rf"\bauthorized_keys\b{_CLAUSE}{{0,120}}{_SSH_PUBLIC_KEY}",
    rf"{_SSH_PUBLIC_KEY}{_CLAUSE}{{0,160}}\bauthorized_keys\b",
    r"\bssh-copy-id\b[^\n]{0,80}@",
]

# -- literal credentials ---------------------------------------------------------------------------
_CREDENTIAL_EXTRA = [
    ("a private key", r"-----begin [a-z ]*private key-----"),
    (
        "an AWS secret access key",
        r"aws_secret_access_key\s*[=:]\s*[\"']?[a-z0-9/+=]{40}\b",
    ),
]

_OVERRIDE_RE = [re.compile(p) for p in (*_OVERRIDES, *_FOREIGN)]
_EXFIL_RE = [(what, re.compile(p)) for what, p in _EXFIL]
_PERSIST_RE = [re.compile(p) for p in _PERSISTENCE]
_CREDENTIAL_RE = [(what, re.compile(p)) for what, p in _CREDENTIAL_EXTRA]
_COMMENT_RE = re.compile(r"<!--|^\s*\[(?://|comment|_)\]:\s*(?:#|<>)", re.MULTILINE)


def intent(raw: str, forms: list[str]) -> IntentFinding | None:
    """The first thing ``raw`` (as written) or any of its normalised ``forms`` says that a
    memory entry never needs to, as ``(category, what, match)``; None if there is none."""
    if credential := _credential(raw):
        return credential
    if _SPACED.search(forms[0]):  # letter-spaced: read it with no spacing at all
        squashed = re.sub(r"[^a-z]", "", _LEET_TOKEN.sub(_unleet, forms[0]))
        found = _SQUASHED_OVERRIDE.search(squashed)
        if found:
            return ("injection", "obfuscated prompt-injection phrasing", found.group(0))
    for form in forms:
        comment = _COMMENT_RE.search(form)
        if comment:
            return ("injection", "a hidden comment", comment.group(0).strip())
        for pattern in _OVERRIDE_RE:
            found = pattern.search(form)
            if found:
                return (
                    "injection",
                    "an instruction that overrides the assistant's",
                    found.group(0),
                )
        for what, pattern in _EXFIL_RE:
            found = pattern.search(form)
            if found:
                return ("exfiltration", what, found.group(0))
        for pattern in _PERSIST_RE:
            found = pattern.search(form)
            if found:
                return (
                    "persistence",
                    "writing into a file that steers agents or shells",
                    found.group(0),
                )
    return None


def _credential(raw: str) -> IntentFinding | None:
    from tether.scrub import REDACTED, scrub

    scrubbed = scrub(raw)
    if scrubbed != raw:
        start = next((i for i, (a, b) in enumerate(zip(raw, scrubbed, strict=False)) if a != b), 0)
        shown = raw[start : start + 4] + "…" if raw[start:] else REDACTED
        return ("credential", "a literal credential", shown)
    lowered = raw.lower()
    for what, pattern in _CREDENTIAL_RE:
        found = pattern.search(lowered)
        if found:
            return ("credential", what, found.group(0)[:20] + "…")
    return None
