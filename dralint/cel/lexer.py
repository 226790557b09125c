"""CEL tokens: one compiled regular expression, literal decoding with CEL's escape rules."""
from __future__ import annotations

import re
from dataclasses import dataclass

# Order matters: longer punctuation first; numbers before '.' so '.5' is a float.
_TOKEN = re.compile(
    r"""
    (?P<ws>[ \t\n\r\f]+|//[^\n]*)
  | (?P<str>(?:[rR][bB]?|[bB][rR]?)?(?:\"\"\"[\s\S]*?\"\"\"|'''[\s\S]*?'''|"(?:[^"\\\n\r]|\\[\s\S])*"|'(?:[^'\\\n\r]|\\[\s\S])*'))
  | (?P<num>0[xX][0-9a-fA-F]+[uU]?|(?:[0-9]+\.[0-9]+(?:[eE][+-]?[0-9]+)?|[0-9]+[eE][+-]?[0-9]+|\.[0-9]+(?:[eE][+-]?[0-9]+)?)|[0-9]+[uU]?)
  | (?P<ident>[_a-zA-Z][_a-zA-Z0-9]*)
  | (?P<op>\.\?|\[\?|==|!=|<=|>=|&&|\|\||[-+*/%!<>?:.,\[\](){}])
    """,
    re.VERBOSE,
)

KEYWORDS = frozenset({"true", "false", "null", "in"})
RESERVED = frozenset({"as", "break", "const", "continue", "else", "for", "function", "if", "import",
                      "let", "loop", "package", "namespace", "return", "var", "void", "while"})


@dataclass(frozen=True, slots=True)
class Token:
    kind: str     # 'ident' 'int' 'uint' 'float' 'str' 'bytes' 'op' 'eof' 'error' ('in' etc. are 'op')
    text: str
    start: int
    value: object = None


class LexError(ValueError):
    def __init__(self, message: str, offset: int) -> None:
        super().__init__(message)
        self.offset = offset


def tokenize(src: str) -> list[Token]:
    """Split ``src`` into tokens; raises LexError at the first unrecognised character."""
    out: list[Token] = []
    pos, n = 0, len(src)
    match = _TOKEN.match
    while pos < n:
        m = match(src, pos)
        if m is None:
            # ANTLR reports what it consumed: '=', '&' and '|' start '==', '&&', '||', so the
            # character after them is part of the text ('= ' for "a = b").
            bad = src[pos:pos + 2] if src[pos] in "=&|" else src[pos]
            raise LexError(f"Syntax error: token recognition error at: '{bad}'", pos)
        kind = m.lastgroup
        text = m.group()
        if kind == "ident":
            if text in KEYWORDS:
                out.append(Token("op", text, pos))
            else:
                out.append(Token("ident", text, pos))
        elif kind == "num":
            out.append(_number(text, pos))
        elif kind == "str":
            out.append(_string(text, pos))
        elif kind == "op":
            out.append(Token("op", text, pos))
        pos = m.end()
    out.append(Token("eof", "<EOF>", n))
    return out


def _number(text: str, pos: int) -> Token:
    low = text.lower()
    if len(low) > 40:
        # Far outside int64/uint64; the parser reports it (and int() would refuse huge strings).
        kind = "float" if ("." in low or ("e" in low and not low.startswith("0x"))) else "int"
        if kind == "float":
            return Token("float", text, pos, _float(low))
        return Token("uint" if low.endswith("u") else "int", text, pos, None)
    if low.startswith("0x"):
        if low.endswith("u"):
            return Token("uint", text, pos, int(low[2:-1], 16))
        return Token("int", text, pos, int(low[2:], 16))
    if "." in low or "e" in low:
        return Token("float", text, pos, _float(low))
    if low.endswith("u"):
        return Token("uint", text, pos, int(low[:-1]))
    return Token("int", text, pos, int(low))


def _float(text: str) -> float | None:
    value = float(text)
    return None if value in (float("inf"), float("-inf")) else value


_ESC = {"a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v",
        "\\": "\\", "'": "'", '"': '"', "`": "`", "?": "?"}


def _string(text: str, pos: int) -> Token:
    i = 0
    raw = is_bytes = False
    while text[i] not in "\"'":
        if text[i] in "rR":
            raw = True
        else:
            is_bytes = True
        i += 1
    q = 3 if text[i:i + 3] in ('"""', "'''") else 1
    body = text[i + q: len(text) - q]
    if raw:
        value: object = body.encode("utf-8") if is_bytes else body
    else:
        value = _unescape(body, is_bytes, pos)
    return Token("bytes" if is_bytes else "str", text, pos, value)


def _unescape(body: str, is_bytes: bool, pos: int) -> object:
    if "\\" not in body:
        return body.encode("utf-8") if is_bytes else body
    parts: list[bytes] = []
    i, n = 0, len(body)
    while i < n:
        c = body[i]
        if c != "\\":
            j = body.find("\\", i)
            j = n if j < 0 else j
            parts.append(body[i:j].encode("utf-8"))
            i = j
            continue
        if i + 1 >= n:
            raise LexError("Syntax error: found '\\' at end of string", pos)
        e = body[i + 1]
        if e in _ESC:
            parts.append(_ESC[e].encode())
            i += 2
        elif e in "xX":
            h = body[i + 2:i + 4]
            if not re.fullmatch(r"[0-9a-fA-F]{2}", h):
                raise LexError("Syntax error: invalid hex escape", pos)
            parts.append(bytes([int(h, 16)]) if is_bytes else chr(int(h, 16)).encode("utf-8"))
            i += 4
        elif e in "uU":
            width = 4 if e == "u" else 8
            h = body[i + 2:i + 2 + width]
            if is_bytes or not re.fullmatch(r"[0-9a-fA-F]{%d}" % width, h):
                raise LexError("Syntax error: invalid unicode escape", pos)
            cp = int(h, 16)
            if cp > 0x10FFFF or 0xD800 <= cp <= 0xDFFF:
                raise LexError("Syntax error: invalid unicode code point", pos)
            parts.append(chr(cp).encode("utf-8"))
            i += 2 + width
        elif e in "0123":
            o = body[i + 1:i + 4]
            if not re.fullmatch(r"[0-3][0-7]{2}", o):
                raise LexError("Syntax error: invalid octal escape", pos)
            parts.append(bytes([int(o, 8)]) if is_bytes else chr(int(o, 8)).encode("utf-8"))
            i += 4
        else:
            raise LexError(f"Syntax error: invalid escape sequence '\\{e}'", pos)
    data = b"".join(parts)
    if is_bytes:
        return data
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise LexError("Syntax error: invalid UTF-8 in string literal", pos) from None
