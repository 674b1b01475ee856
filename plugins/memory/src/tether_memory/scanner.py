"""The write scanner of cross-session memory.

Memory is injected into every future system prompt, so a write is a prompt that outlives
the conversation that produced it. Anything that reads like an instruction aimed at the
model rather than a fact about the user or the project is refused, with a reason:

- prompt-injection phrasing ("ignore all previous instructions", "you are now", "new
  instructions:", chat-template markers), in English, Spanish, French, German, Italian,
  Portuguese, Russian, Chinese, Japanese, Korean and Arabic;
- instructions to exfiltrate secrets: sending, posting or uploading keys, tokens,
  passwords, ``~/.ssh``, ``.env`` and similar to a URL or through ``curl``/``wget``/``nc``,
  or printing secret files into replies;
- everything :mod:`tether_memory.intent` looks for, on de-obfuscated forms too (letter
  spacing, leetspeak, hidden comments): paraphrased overrides in more languages, data
  smuggled out through URLs, environment dumps, downloads piped into shells, persistence
  through agent instruction and shell startup files, literal credentials;
- invisible, bidi-control and tag Unicode characters (zero-width spaces, U+202A–U+202E,
  U+2066–U+2069, U+E0000–U+E007F, other format characters, control characters), except
  where they are part of ordinary text: a zero-width joiner inside an emoji sequence or
  between letters of scripts that need it, and the tag sequence of a subdivision flag.

Matching runs on a normalised form: NFKC (full-width and ligature forms fold to plain
letters), case folding, accents stripped from Latin letters, Cyrillic or Greek look-alike
letters inside Latin words mapped to Latin, markup punctuation and runs of whitespace
collapsed. Benign text that merely mentions instructions, non-Latin scripts and emoji pass.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from typing import Literal

from .intent import intent, variants

__all__ = ["ScanResult", "normalize", "scan"]

Category = Literal["invisible", "injection", "exfiltration", "persistence", "credential"]


@dataclass(frozen=True, slots=True)
class ScanResult:
    """The verdict on one text. ``reason`` explains a refusal to the model and the user."""

    allowed: bool
    category: Category | None = None
    reason: str = ""
    match: str = ""

    def __bool__(self) -> bool:
        return self.allowed


ALLOWED = ScanResult(True)


# -- invisible characters ------------------------------------------------------------------
_ZWNJ, _ZWJ = "\u200c", "\u200d"
_BIDI = {chr(c) for c in (*range(0x202A, 0x202F), *range(0x2066, 0x206A), 0x200E, 0x200F, 0x061C)}
_INVISIBLE_LETTERS = {"\u115f", "\u1160", "\u3164", "\uffa0", "\u2800"}
_VARIATION = {chr(c) for c in range(0xFE00, 0xFE10)}
_FLAG_TAGS = re.compile("\U0001f3f4[\U000e0030-\U000e0039\U000e0061-\U000e007a]{2,6}\U000e007f")


def _is_pictographic(char: str) -> bool:
    code = ord(char)
    return (
        0x1F000 <= code <= 0x1FAFF
        or 0x2600 <= code <= 0x27BF
        or 0x2300 <= code <= 0x23FF
        or 0x2B00 <= code <= 0x2BFF
        or code in (0x00A9, 0x00AE, 0x203C, 0x2049, 0x2122, 0x2139, 0x3030, 0x303D)
    )


def _is_joinable(char: str) -> bool:
    """Letters and marks (ZWJ/ZWNJ shape Persian, Indic and other scripts) or emoji."""
    return unicodedata.category(char)[0] in "LM" or _is_pictographic(char)


def _describe(char: str) -> str:
    name = unicodedata.name(char, "")
    return f"U+{ord(char):04X}" + (f" {name}" if name else "")


def _invisible(text: str) -> ScanResult:
    flags = {m.start(): m.end() for m in _FLAG_TAGS.finditer(text)}
    index = 0
    while index < len(text):
        if index in flags:
            index = flags[index]
            continue
        char = text[index]
        code = ord(char)
        bad: str | None = None
        if char in _BIDI:
            bad = "a bidirectional-control character"
        elif 0xE0000 <= code <= 0xE007F:
            bad = "a Unicode tag character"
        elif char in (_ZWJ, _ZWNJ):
            before = text[index - 1] if index else ""
            after = text[index + 1] if index + 1 < len(text) else ""
            prev = (
                before if before not in "\ufe0f\ufe0e" else (text[index - 2] if index > 1 else "")
            )
            if not (prev and after and _is_joinable(prev) and _is_joinable(after)):
                bad = "a zero-width joiner outside a word or emoji"
        elif char in _INVISIBLE_LETTERS:
            bad = "an invisible filler character"
        elif 0xE0100 <= code <= 0xE01EF or (
            0xFE00 <= code <= 0xFE0F and index and text[index - 1] in _VARIATION
        ):
            bad = "a run of variation selectors (can hide data)"
        else:
            category = unicodedata.category(char)
            if category == "Cf" and char not in "\ufe0e\ufe0f":
                bad = "an invisible formatting character"
            elif category == "Cc" and char not in "\n\t\r":
                bad = "a control character"
        if bad is not None:
            return ScanResult(
                False,
                "invisible",
                f"The text contains {bad} ({_describe(char)}) at position {index}. Hidden "
                "characters can smuggle instructions into the prompt; write the entry as "
                "plain visible text.",
                _describe(char),
            )
        index += 1
    return ALLOWED


# -- normalisation ---------------------------------------------------------------------
_CONFUSABLES = str.maketrans(
    {
        # Cyrillic
        "а": "a", "в": "b", "е": "e", "ё": "e", "к": "k", "м": "m", "н": "h", "о": "o",
        "р": "p", "с": "c", "т": "t", "у": "y", "х": "x", "і": "i", "ї": "i", "ј": "j",
        "ѕ": "s", "ԁ": "d", "ԛ": "q", "ԝ": "w", "ɡ": "g",
        # Greek
        "α": "a", "β": "b", "ε": "e", "η": "n", "ι": "i", "κ": "k", "ν": "v", "ο": "o",
        "ρ": "p", "τ": "t", "υ": "u", "χ": "x", "γ": "y",
    }
)  # fmt: skip
_WORD = re.compile(r"\w+")
_MARKUP = re.compile(r"[*_`|#>\"'“”‘’«»„‚\[\](){}=+^]+")
_SPACE = re.compile(r"\s+")


def _strip_latin_accents(text: str) -> str:
    out: list[str] = []
    for char in unicodedata.normalize("NFD", text):
        if unicodedata.category(char) == "Mn" and out and ord(out[-1]) < 0x250:
            continue
        out.append(char)
    return unicodedata.normalize("NFC", "".join(out))


def _unmix(match: re.Match[str]) -> str:
    word = match.group(0)
    if any("a" <= c <= "z" for c in word) and any(ord(c) > 0x36F for c in word):
        return word.translate(_CONFUSABLES)
    return word


def normalize(text: str) -> str:
    """The form patterns are matched against (see the module docstring)."""
    folded = unicodedata.normalize("NFKC", text).casefold()
    folded = _strip_latin_accents(folded)
    folded = _WORD.sub(_unmix, folded)
    return _SPACE.sub(" ", folded).strip()


def _words(normalized: str) -> str:
    """``normalized`` without markup punctuation, for phrase matching."""
    return _SPACE.sub(" ", _MARKUP.sub(" ", normalized)).strip()


# -- prompt injection ----------------------------------------------------------------------
_G = r"[^.;!?\n]{0,40}?"  # a short gap inside one clause

_INJECTION_EN = [
    rf"\b(ignore|disregard|forget|override|bypass|skip|set aside|discard|throw out)\b{_G}\b"
    rf"(previous|prior|preceding|above|earlier|former|original|initial|system|developer|safety|"
    rf"all (of )?(the|your|my|these|those)|any( of)? (the|your))\b{_G}\b(instructions?|prompts?|"
    rf"rules|directions|directives|guidelines|guardrails|messages|context|commands|constraints|"
    rf"programming|policies|restrictions)\b",
    r"\b(ignore|disregard|forget)\b (everything|all|anything) (above|before|prior|previously|"
    r"(that )?(you (were|have been) told|i said before))\b",
    r"\b(reveal|print|show|output|repeat|leak|dump|disclose|override|disregard|ignore)\b (me )?"
    r"(the |your |its )?(full |entire |hidden |original )?(system|developer|initial) "
    r"(prompt|message|instructions?)\b",
    r"\byou are now\b",
    r"\byou('re| are) no longer (bound|restricted|an? ai|an? assistant|required)\b",
    r"\b(new|updated|real|actual|true|secret|hidden) (system )?(instructions?|directives?|orders|"
    r"rules|prompt) ?:",
    r"\b(your|the) (real|actual|true|new) (instructions|purpose|task|goal|objective|orders) "
    r"(is|are|will be)\b",
    r"\b(system|developer) (prompt|message|override|instructions?) ?:",
    r"\b(do not|don't|never) (tell|inform|alert|notify|warn|show) (the )?(user|human|operator)\b",
    r"\bwithout (telling|informing|asking|notifying|alerting) the (user|human|operator)\b",
    r"\b(developer|god|dan|jailbreak|unrestricted) mode\b",
    r"\bdo anything now\b",
    r"\b(pretend|act as if|imagine) (that )?you (have|had) no (rules|restrictions|guidelines|"
    r"limits|filters)\b",
    r"\b(ignore|bypass|disable|turn off) (your |all |the )?(safety|content|ethical) "
    r"(guidelines|filters|rules|restrictions|policies)\b",
]
_INJECTION_OTHER = [
    # Spanish
    r"\b(ignora|ignorar|ignore|olvida|olvidar|olvide|omite|omitir|descarta|haz caso omiso de)\b"
    rf"{_G}\b(instrucciones|indicaciones|reglas|ordenes|directrices)\b{_G}"
    r"\b(anteriores|previas|precedentes|de arriba|del sistema|originales)\b",
    r"\b(ahora eres|a partir de ahora eres)\b",
    r"\bnuevas instrucciones ?:",
    # French
    r"\b(ignore|ignorez|ignorer|oublie|oubliez|oublier|ne tiens pas compte|ne tenez pas compte)\b"
    rf"{_G}\b(instructions|consignes|regles|directives|ordres)\b{_G}"
    r"\b(precedentes|anterieures|ci-dessus|du systeme|initiales|d'origine)\b",
    r"\b(tu es maintenant|vous etes maintenant|desormais tu es|desormais vous etes)\b",
    r"\bnouvelles (instructions|consignes) ?:",
    # German
    r"\b(ignoriere|ignorieren|ignoriert|vergiss|vergessen|vergesst|missachte|missachten)\b"
    rf"{_G}\b(vorherigen|vorigen|bisherigen|obigen|fruheren|alle|system)\w*\b{_G}"
    r"\b(anweisungen|instruktionen|befehle|regeln|vorgaben|anordnungen|prompts?)\b",
    r"\b(du bist (jetzt|nun|ab sofort)|sie sind (jetzt|nun|ab sofort))\b",
    r"\bneue (anweisungen|instruktionen|befehle) ?:",
    # Italian
    r"\b(ignora|ignorate|dimentica|dimenticate)\b"
    rf"{_G}\b(istruzioni|regole|indicazioni)\b{_G}\b(precedenti|di sistema|originali)\b",
    r"\b(ora sei|adesso sei|da ora in poi sei)\b",
    r"\bnuove istruzioni ?:",
    # Portuguese
    r"\b(ignore|ignora|ignorar|esqueca|esquece|desconsidere)\b"
    rf"{_G}\b(instrucoes|regras|orientacoes)\b{_G}\b(anteriores|previas|do sistema|originais)\b",
    r"\b(agora voce e|agora tu es|a partir de agora voce e)\b",
    r"\bnovas instrucoes ?:",
    # Russian
    r"(игнорируй|игнорируйте|игнорировать|забудь|забудьте|забыть|не обращай внимания на)"
    r"[^.;!?\n]{0,40}?(инструкци|указани|команд|правил|промпт)",
    r"\bтеперь (ты|вы)\b",
    r"\bновые (инструкции|указания) ?:",
    r"\bсистемн\w* (промпт|подсказк|инструкци)",
    # Chinese (simplified and traditional)
    r"(忽略|忽視|忽视|无视|無視|忘记|忘記|不要理会|不要理會)[^。！？\n]{0,12}?"
    r"(指令|指示|说明|說明|提示|规则|規則|命令|设定|設定)",
    r"你现在是|你現在是|从现在起你是|從現在起你是",
    r"新的?(指令|指示)[:：]",
    r"(系统|系統)(提示|指令)",
    # Japanese
    r"(以前|これまで|前|上記|先)の[^。！？\n]{0,10}?(指示|命令|ルール|プロンプト)[^。！？\n]{0,6}?"
    r"(無視|忘れ)",
    r"(指示|命令)を(すべて|全て)?(無視|忘れ)",
    r"あなたは今から|今からあなたは",
    r"新しい指示[:：]",
    r"システムプロンプト",
    # Korean
    r"(이전|앞의|위의)[^.!?\n]{0,12}?(지시|명령|지침|규칙)[^.!?\n]{0,8}?(무시|잊)",
    r"너는 이제|당신은 이제",
    # Arabic
    r"(تجاهل|انس|أهمل)[^.!?\n]{0,30}?(التعليمات|الأوامر|التوجيهات)",
]
_TEMPLATE_MARKERS = [
    r"<\|(im_start|im_end|system|endoftext|start_header_id|end_header_id|eot_id)\|>",
    r"\[/?inst\]",
    r"<</?sys>>",
    r"</?(system|system_prompt|instructions)>",
]

_INJECTION = [re.compile(p) for p in (*_INJECTION_EN, *_INJECTION_OTHER)]
_TEMPLATES = [re.compile(p) for p in _TEMPLATE_MARKERS]


def _injection(normalized: str, words: str) -> ScanResult:
    for pattern in _TEMPLATES:
        found = pattern.search(normalized)
        if found:
            return _refuse_injection(found.group(0), "a chat-template marker")
    for pattern in _INJECTION:
        found = pattern.search(words)
        if found:
            return _refuse_injection(found.group(0), "prompt-injection phrasing")
    return ALLOWED


def _refuse_injection(match: str, what: str) -> ScanResult:
    return ScanResult(
        False,
        "injection",
        f'The text contains {what} ("{match}"). Memory holds facts about the user and the '
        "project, not instructions that redirect the assistant; state the fact or "
        "preference itself.",
        match,
    )


# -- exfiltration ----------------------------------------------------------------------
_SECRET_FILES = (
    r"(~|\$home|%userprofile%)?/?\.ssh\b|\bid_(rsa|dsa|ecdsa|ed25519)\b|(^|[\s/\"'`(@=])\.env\b|"
    r"\.aws/credentials|\.netrc\b|\.git-credentials|\.pypirc|\.npmrc|\.docker/config\.json|"
    r"/etc/(shadow|passwd)\b|\.kube/config|\.gnupg\b|keychain|\bwallet\.dat\b"
)
_SECRET_NOUNS = (
    r"api[ _-]?keys?|secret( access)?[ _-]?keys?|secrets|credentials?|passwords?|passwd|"
    r"passphrases?|(access|auth|bearer|session|refresh|github|api|oauth)[ _-]?tokens?|"
    r"\b(the|my|your|our|their) token\b|private[ _-]?keys?|ssh[ _-]?keys?|cookies|env(ironment)? var(iable)?s|seed phrase|"
    r"aws_secret_access_key|\$[a-z_]*(key|token|secret|password)[a-z_]*|"
    r"claves?( de api)?|contrasenas?|credenciales|cles?( d'api| api)?|mots? de passe|"
    r"identifiants|jetons?|schlussel|passworter|passwort|zugangsdaten|"
    r"ключ\w*|парол\w*|токен\w*|учетн\w* данн\w*|"
    r"密钥|密碼|密码|令牌|凭证|凭据|憑證|秘密鍵|パスワード|トークン|認証情報|비밀번호|토큰|"
    r"مفتاح|كلمة المرور"
)
_SEND_VERBS = (
    r"send|sends|sending|post|posts|posting|upload|uploads|uploading|transmit|exfiltrate|"
    r"forward|email|e-mail|leak|share|copy|sync|pipe|submit|paste|report|beacon|"
    r"envia|enviar|envie|sube|subir|manda|mandar|comparte|"
    r"envoie|envoyer|envoyez|televerse|transmets|transmettre|partage|"
    r"sende|senden|schicke|schicken|ubermittle|ubermitteln|lade|hochladen|"
    r"invia|inviare|carica|"
    r"отправ\w*|перешл\w*|загрузи\w*|выгрузи\w*|передай\w*"
)
_SEND_VERBS_CJK = r"发送|發送|上传|上傳|发给|發給|传到|傳到|提交|送信|アップロード|전송|보내"
_STRONG_DESTINATION = (
    r"https?://|\bftp://|\bwww\.|\b[a-z0-9-]+(\.[a-z0-9-]+)*\.(com|net|org|io|ru|cn|xyz|"
    r"top|site|info|me|dev|app|sh|co|biz|link|tk)\b|\b\d{1,3}(\.\d{1,3}){3}\b|webhook|"
    r"pastebin|ngrok|requestbin|discord|telegram|@[a-z0-9-]+\.[a-z]"
)
_DESTINATION = (
    rf"{_STRONG_DESTINATION}|\bserver\b|\bendpoint\b|\burl\b|servidor|serveur|адрес|сервер|"
    r"服务器|伺服器|网址|網址"
)
_NETWORK_TOOLS = (
    r"\b(curl|wget|nc|ncat|netcat|socat|scp|sftp|rsync|ftp|invoke-webrequest|iwr|"
    r"invoke-restmethod|requests\.(post|put|get)|urllib|fetch\(|httpie|xh)\b|/dev/tcp/"
)
_SHOW_VERBS = r"\b(print|reveal|include|output|display|echo|cat|paste|append|embed|attach|dump)\b"

_SECRET_FILE_RE = re.compile(_SECRET_FILES)
_SECRET_RE = re.compile(rf"({_SECRET_NOUNS})|({_SECRET_FILES})")
_SEND_RE = re.compile(rf"(?<!\w)({_SEND_VERBS})(?!\w)|{_SEND_VERBS_CJK}")
_DEST_RE = re.compile(_DESTINATION)
_STRONG_DEST_RE = re.compile(_STRONG_DESTINATION)
_NET_RE = re.compile(_NETWORK_TOOLS)
_SHOW_RE = re.compile(_SHOW_VERBS)
_ENV_DUMP_RE = re.compile(r"\b(env|printenv|set)\b *\| *(curl|wget|nc|ncat|netcat|base64)\b")
_NEGATED = re.compile(
    r"\b(never|not|don't|dont|do not|cannot|can't|must not|mustn't|should not|shouldn't|no)"
    r" (ever )?$"
)
_LOCAL_VERBS = {"copy", "sync", "pipe", "report", "share"}
_INTO_REPLY_RE = re.compile(
    r"\b(in|into|to|with) (every|each|all|your|the|any) (\w+ )?(reply|replies|response|responses|"
    r"answer|answers|message|messages|commit|commits|output|log|logs|comment|comments)\b"
)


def _clauses(text: str) -> list[str]:
    """Sentences of ``text``: dots inside paths and URLs do not end one."""
    return [c for c in re.split(r"(?<=[;!?\n。！？])|(?<=\.)(?=\s)", text) if c.strip()]


def _exfiltration(normalized: str) -> ScanResult:
    env_dump = _ENV_DUMP_RE.search(normalized)
    if env_dump:
        return _refuse_exfiltration(env_dump.group(0))
    for clause in _clauses(normalized):
        secret = _SECRET_RE.search(clause)
        if secret is None:
            continue
        network = _NET_RE.search(clause)
        if network:
            return _refuse_exfiltration(f"{network.group(0)} … {secret.group(0)}")
        send = _affirmative(_SEND_RE, clause)
        local = send is not None and send.group(0) in _LOCAL_VERBS
        if send and (_STRONG_DEST_RE if local else _DEST_RE).search(clause):
            return _refuse_exfiltration(f"{send.group(0)} … {secret.group(0)}")
        show = _affirmative(_SHOW_RE, clause)
        if show and _INTO_REPLY_RE.search(clause):
            return _refuse_exfiltration(f"{show.group(0)} … {secret.group(0)}")
        secret_file = _SECRET_FILE_RE.search(clause)
        verb = show or (None if local else send)
        if secret_file and verb:
            return _refuse_exfiltration(f"{verb.group(0)} … {secret_file.group(0).strip()}")
    return ALLOWED


def _affirmative(pattern: re.Pattern[str], clause: str) -> re.Match[str] | None:
    """The first match of ``pattern`` in ``clause`` not directly negated ("never send")."""
    for found in pattern.finditer(clause):
        if not _NEGATED.search(clause[: found.start()]):
            return found
    return None


def _refuse_exfiltration(match: str) -> ScanResult:
    return ScanResult(
        False,
        "exfiltration",
        f'The text reads like an instruction to send secrets or credentials somewhere ("{match}"). '
        "Memory must never carry such instructions. If the user has a real preference about "
        'where secrets live, record only that (e.g. "API keys are kept in 1Password").',
        match,
    )


# -- entry point -----------------------------------------------------------------------------
def scan(text: str) -> ScanResult:
    """Check ``text`` before it is written to memory; the result is falsy if refused.

    Checks run in order: hidden characters (on the raw text), then injection phrasing and
    exfiltration instructions on the normalised text and on its de-obfuscated forms, then
    the intent checks of :mod:`tether_memory.intent` (overrides however phrased, hidden
    comments, data in URLs, environment dumps, downloads into shells, persistence, literal
    credentials). The first finding is returned.
    """
    hidden = _invisible(text)
    if not hidden.allowed:
        return hidden
    normalized = normalize(text)
    forms = variants(normalized)
    for form in forms:
        verdict = _injection(form, _words(form))
        if not verdict.allowed:
            return verdict
        verdict = _exfiltration(form)
        if not verdict.allowed:
            return verdict
    finding = intent(text, forms)
    if finding is None:
        return ALLOWED
    category, what, match = finding
    advice = _ADVICE[category]
    return ScanResult(False, category, f'The text contains {what} ("{match}"). {advice}', match)


_ADVICE: dict[str, str] = {
    "injection": (
        "Memory holds facts about the user and the project, not instructions that redirect "
        "the assistant; state the fact or preference itself."
    ),
    "exfiltration": (
        "Memory must never carry instructions that send data or secrets anywhere. If the user "
        'has a real preference about where secrets live, record only that (e.g. "API keys are '
        'kept in 1Password").'
    ),
    "persistence": (
        "Memory must not make the assistant plant instructions or commands in files that run "
        "or steer later sessions; describe the convention instead."
    ),
    "credential": (
        "Never store a secret in memory: it would be sent with every future prompt. Record "
        'where it is kept instead (e.g. "the deploy token is in the CI secrets").'
    ),
}
