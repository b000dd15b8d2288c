"""Bicep parameters marked secure: the decorator, not the name, says the default is a secret.

`@secure()` on a Bicep `param` (string or object) tells Azure never to log or show the value,
so its default (`param jumpboxCred string = '...'`) is a secret whatever the parameter is
called. Other decorators (`@description(...)`, `@minLength(12)`) and blank lines may stand
between the decorator and the `param`. Bicep strings are single-quoted with `\\'` escapes, or
`'''` multi-line literals; both are replaced whole. (ARM JSON `securestring`/`secureObject`
parameters are handled by `secret_structure` on the parsed document.)

Linear time: the decorator is a literal, the gap and the value are bounded.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Final

from core.safety.secret_judge import innocent_value
from core.safety.secret_pairs import learn, mark

_SECURE_PARAM_RE: Final = re.compile(
    r"@(?:sys\.)?secure\(\)(?P<gap>(?:[ \t]*\r?\n|[ \t]*@[A-Za-z.]{1,40}\([^\r\n]{0,400}\)"
    r"|[ \t]*//[^\r\n]{0,400}){0,12})[ \t]*param[ \t]+[A-Za-z_][A-Za-z0-9_]{0,100}"
    r"(?:[ \t]+[A-Za-z_][A-Za-z0-9_.]{0,60})?[ \t]*=[ \t]*"
    r"(?:'''(?P<m>[^\x00]{0,8192}?)'''|'(?P<s>(?:[^'\\\r\n]|\\.){1,4096})')")


def redact_bicep_secure(text: str, counts: Counter[str]) -> str:
    """Replace the default value of every `@secure()` Bicep parameter."""
    if "secure()" not in text:
        return text

    def replace(match: re.Match[str]) -> str:
        group = "s" if match.group("s") is not None else "m"
        value = match.group(group)
        if "[REDACTED:" in value or not value.strip() or (
                group == "s" and innocent_value(value)):
            return match.group(0)
        learn(value, "secret_value")
        counts["secret_value"] += 1
        start, end = match.start(group) - match.start(), match.end(group) - match.start()
        return match.group(0)[:start] + mark("secret_value") + match.group(0)[end:]
    return _SECURE_PARAM_RE.sub(replace, text)
